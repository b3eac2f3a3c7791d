//! Unit tests of the key set and of discovery's URL rules (the fetching itself is exercised
//! over HTTP in the workspace's `tests/tests/oauth_bearer.rs`).

use jsonwebtoken::Algorithm;
use serde_json::json;

use super::*;

fn set(keys: serde_json::Value) -> KeySet {
    KeySet::from_jwks(json!({ "keys": keys }).to_string().as_bytes()).unwrap()
}

fn rsa(kid: &str) -> serde_json::Value {
    json!({"kty": "RSA", "kid": kid, "n": "AQAB", "e": "AQAB"})
}

fn ec(kid: &str, crv: &str) -> serde_json::Value {
    json!({"kty": "EC", "kid": kid, "crv": crv, "x": "AQAB", "y": "AQAB"})
}

fn found(lookup: Result<Arc<jsonwebtoken::DecodingKey>, KeyError>) -> bool {
    lookup.is_ok()
}

#[test]
fn only_asymmetric_signature_keys_are_kept() {
    let keys = set(json!([
        rsa("r1"),
        ec("e1", "P-256"),
        {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
        {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
        {"kty": "RSA", "kid": "oaep", "alg": "RSA-OAEP", "n": "AQAB", "e": "AQAB"},
        {"kty": "EC", "kid": "p521", "crv": "P-521", "x": "AQAB", "y": "AQAB"},
        {"kty": "weird", "kid": "w"},
        "not even an object",
    ]));
    assert_eq!(keys.len(), 2);
    assert!(found(keys.find(Some("r1"), Algorithm::RS256)));
    for skipped in ["secret", "enc", "oaep", "p521", "w"] {
        assert!(matches!(keys.find(Some(skipped), Algorithm::RS256), Err(KeyError::Unknown)), "{skipped}");
    }
    assert!(matches!(keys.find(Some("secret"), Algorithm::HS256), Err(KeyError::Unknown)));
}

#[test]
fn a_key_verifies_only_algorithms_of_its_type() {
    let keys = set(json!([rsa("r"), ec("p256", "P-256"), ec("p384", "P-384"),
        {"kty": "RSA", "kid": "rs384", "alg": "RS384", "n": "AQAB", "e": "AQAB"}]));
    assert!(found(keys.find(Some("r"), Algorithm::PS512)));
    assert!(matches!(keys.find(Some("r"), Algorithm::ES256), Err(KeyError::Mismatch)));
    assert!(matches!(keys.find(Some("r"), Algorithm::HS256), Err(KeyError::Mismatch)));
    assert!(found(keys.find(Some("p256"), Algorithm::ES256)));
    assert!(matches!(keys.find(Some("p256"), Algorithm::ES384), Err(KeyError::Mismatch)));
    assert!(found(keys.find(Some("p384"), Algorithm::ES384)));
    assert!(found(keys.find(Some("rs384"), Algorithm::RS384)));
    assert!(matches!(keys.find(Some("rs384"), Algorithm::RS256), Err(KeyError::Mismatch)), "declared alg binds");
}

#[test]
fn a_token_without_kid_needs_a_unique_candidate() {
    let keys = set(json!([rsa("r"), ec("e", "P-256")]));
    assert!(found(keys.find(None, Algorithm::RS256)));
    assert!(found(keys.find(None, Algorithm::ES256)));
    let two = set(json!([rsa("r1"), rsa("r2")]));
    assert!(matches!(two.find(None, Algorithm::RS256), Err(KeyError::Unknown)));
    let unnamed = set(json!([{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]));
    assert!(found(unnamed.find(None, Algorithm::RS256)));
    assert!(matches!(unnamed.find(Some("x"), Algorithm::RS256), Err(KeyError::Unknown)));
}

#[test]
fn not_a_jwks() {
    assert!(KeySet::from_jwks(b"[]").is_err());
    assert!(KeySet::from_jwks(b"{}").is_err());
    assert!(KeySet::from_jwks(br#"{"keys": []}"#).unwrap().is_empty());
}

#[test]
fn discovery_urls_follow_mcp_order() {
    let no_path = Url::parse("https://auth.example.com/").unwrap();
    assert_eq!(
        metadata_urls(&no_path),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        ]
    );
    let with_path = Url::parse("https://auth.example.com/tenant1").unwrap();
    assert_eq!(
        metadata_urls(&with_path),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn metadata_must_name_our_issuer_and_a_fetchable_jwks_uri() {
    let doc = |issuer: &str, jwks: &str| json!({"issuer": issuer, "jwks_uri": jwks}).to_string().into_bytes();
    let issuer = "https://auth.example.com";
    assert_eq!(
        jwks_uri_of(&doc(issuer, "https://auth.example.com/keys"), issuer).unwrap().as_str(),
        "https://auth.example.com/keys"
    );
    assert!(jwks_uri_of(&doc("https://honest.example", "https://auth.example.com/keys"), issuer).is_err());
    assert!(jwks_uri_of(&doc("https://auth.example.com/", "https://auth.example.com/keys"), issuer).is_err());
    assert!(jwks_uri_of(&doc(issuer, "http://auth.example.com/keys"), issuer).is_err());
    assert!(jwks_uri_of(&doc("http://127.0.0.1:1", "http://127.0.0.1:1/keys"), "http://127.0.0.1:1").is_ok());
    assert!(jwks_uri_of(br#"{"issuer": "https://auth.example.com"}"#, issuer).is_err());
}
