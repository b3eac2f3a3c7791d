//! Unit tests of the bearer authenticator's pure parts: configuration, the `Authorization`
//! header, the JOSE header peek and the error mapping. Tokens verified against a served JWKS
//! are in the workspace's `tests/tests/oauth_bearer.rs`.

use std::time::Duration;

use super::*;

fn parts(values: &[&str]) -> Parts {
    let mut builder = http::Request::builder().uri("/mcp");
    for value in values {
        builder = builder.header(http::header::AUTHORIZATION, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

fn token_of(values: &[&str]) -> Option<Option<String>> {
    match bearer_token(&parts(values)) {
        BearerToken::Absent => None,
        BearerToken::Invalid => Some(None),
        BearerToken::Present(t) => Some(Some(t.to_owned())),
    }
}

#[test]
fn authorization_header_parsing() {
    assert_eq!(token_of(&[]), None);
    assert_eq!(token_of(&["Basic dXNlcjpwYXNz"]), None, "another scheme is no bearer credential");
    assert_eq!(token_of(&["Bearer a.b.c"]), Some(Some("a.b.c".into())));
    assert_eq!(token_of(&["bearer   a.b.c "]), Some(Some("a.b.c".into())));
    assert_eq!(token_of(&["Bearer"]), Some(None));
    assert_eq!(token_of(&["Bearer "]), Some(None));
    assert_eq!(token_of(&["Bearer a b"]), Some(None));
    assert_eq!(token_of(&["Bearer a\"b"]), Some(None));
    assert_eq!(token_of(&["Bearer a.b.c", "Bearer d.e.f"]), Some(None));
    let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
    assert_eq!(token_of(&[&long]), Some(None));
}

#[test]
fn header_peek() {
    let enc = |json: &str| URL_SAFE_NO_PAD.encode(json);
    let token = format!("{}.e30.sig", enc(r#"{"alg":"RS256","kid":"k1","typ":"at+jwt"}"#));
    let header = peek_header(&token).unwrap();
    assert_eq!((header.alg.as_str(), header.kid.as_deref()), ("RS256", Some("k1")));
    for bad in [
        "garbage".to_owned(),
        "a.b".to_owned(),
        "a.b.c.d.e".to_owned(),
        format!("{}.e30.", enc("not json")),
        format!("{}.e30.", enc(r#"{"kid":"k"}"#)),
        format!("{}.e30.", enc(r#"{"alg":5}"#)),
        "!!!.e30.sig".to_owned(),
    ] {
        assert!(matches!(peek_header(&bad), Err(TokenError::Malformed)), "{bad}");
    }
}

#[test]
fn algorithms_are_asymmetric_only() {
    assert_eq!("ES256".parse::<JwsAlgorithm>(), Ok(JwsAlgorithm::ES256));
    for refused in ["none", "None", "HS256", "HS512", "rs256", ""] {
        assert_eq!(
            refused.parse::<JwsAlgorithm>(),
            Err(BearerConfigError::UnsupportedAlgorithm(refused.into())),
            "{refused}"
        );
    }
    for alg in JwsAlgorithm::ALL {
        assert_ne!(alg.to_jwt().family(), jsonwebtoken::AlgorithmFamily::Hmac);
        assert_eq!(alg.to_string().parse::<JwsAlgorithm>(), Ok(alg));
    }
}

#[test]
fn config_defaults_and_flags() {
    let config = BearerConfig::from_flags(
        "https://auth.example.com/t1",
        "https://mcp.example.com/mcp",
        Some(" https://auth.example.com/keys "),
        Some(""),
        " mcp:read,, mcp:write ,",
    )
    .unwrap();
    assert_eq!(config.jwks_url.as_deref(), Some("https://auth.example.com/keys"));
    assert_eq!(config.tenant_claim, None);
    assert_eq!(config.required_scopes, ["mcp:read", "mcp:write"]);
    assert_eq!(config.algorithms, [JwsAlgorithm::RS256, JwsAlgorithm::ES256]);
    assert_eq!(config.leeway, Duration::from_secs(60));
    assert_eq!(config.jwks_refetch_interval, Duration::from_secs(30));
    assert_eq!(config.resource_metadata_url, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    let metadata = config.metadata().unwrap().to_json();
    assert_eq!(metadata["authorization_servers"][0], "https://auth.example.com/t1");
    assert_eq!(metadata["scopes_supported"], serde_json::json!(["mcp:read", "mcp:write"]));
}

#[test]
fn config_refusals() {
    let flags = |issuer: &str, jwks: Option<&str>, tenant: Option<&str>, scopes: &str| {
        BearerConfig::from_flags(issuer, "https://mcp.example.com/mcp", jwks, tenant, scopes)
    };
    assert!(matches!(
        flags("http://auth.example.com", None, None, ""),
        Err(BearerConfigError::InsecureUrl { field: "issuer", .. })
    ));
    assert!(flags("http://localhost:8080", None, None, "").is_ok());
    assert!(flags("http://127.0.0.1:8080", None, None, "").is_ok());
    assert!(flags("http://[::1]:8080", None, None, "").is_ok());
    assert!(matches!(
        flags("https://a.example", Some("http://keys.example/jwks"), None, ""),
        Err(BearerConfigError::InsecureUrl { field: "jwks_url", .. })
    ));
    assert_eq!(flags("https://a.example", None, None, "a\"b"), Err(BearerConfigError::InvalidScope("a\"b".into())));
    assert_eq!(flags("https://a.example", None, None, "a b"), Err(BearerConfigError::InvalidScope("a b".into())));
    assert_eq!(
        flags("https://a.example", None, Some("org..id"), ""),
        Err(BearerConfigError::InvalidTenantClaim("org..id".into()))
    );
    assert!(matches!(BearerConfig::new("https://a.example", "mcp.example.com"), Err(BearerConfigError::Resource(_))));
    let mut config = BearerConfig::new("https://a.example", "https://mcp.example.com").unwrap();
    config.algorithms.clear();
    assert_eq!(BearerAuthenticator::new(config).unwrap_err(), BearerConfigError::NoAlgorithms);
    let mut config = BearerConfig::new("https://a.example", "https://mcp.example.com").unwrap();
    config.jwks_hard_max_age = config.jwks_max_age / 2;
    assert_eq!(BearerAuthenticator::new(config).unwrap_err(), BearerConfigError::JwksAges);
}

#[test]
fn the_typ_check_reads_media_types_case_insensitively() {
    use TokenTypeCheck::*;
    for typ in [None, Some("JWT"), Some("jwt"), Some("at+jwt"), Some("application/at+JWT"), Some("application/jwt")] {
        assert!(RejectOtherTypes.admits(typ), "{typ:?}");
    }
    for typ in ["dpop+jwt", "logout+jwt", "application/secevent+jwt", "JOSE", ""] {
        assert!(!RejectOtherTypes.admits(Some(typ)), "{typ}");
        assert!(Off.admits(Some(typ)));
    }
    assert!(RequireAccessToken.admits(Some("at+jwt")) && RequireAccessToken.admits(Some("Application/AT+JWT")));
    for typ in [None, Some("JWT"), Some("application/jwt"), Some("at+jwt2")] {
        assert!(!RequireAccessToken.admits(typ), "{typ:?}");
    }
}

#[test]
fn jsonwebtoken_errors_map_to_short_descriptions() {
    assert_eq!(token_error(&ErrorKind::ExpiredSignature).to_string(), "token expired");
    assert_eq!(token_error(&ErrorKind::MissingRequiredClaim("aud".into())).to_string(), "missing claim: aud");
    assert_eq!(
        token_error(&ErrorKind::MissingRequiredClaim("x-secret-thing".into())).to_string(),
        "missing claim: claim"
    );
    assert_eq!(token_error(&ErrorKind::InvalidToken), TokenError::Malformed);
}
