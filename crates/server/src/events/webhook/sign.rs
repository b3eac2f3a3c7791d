//! Standard Webhooks signatures: the `webhook-signature` header a receiver checks to know a
//! delivery came from this server and was not altered or replayed under another id or time.
//!
//! Owns the signing secret's format (`whsec_` + base64, 24 to 64 bytes), the signature itself
//! (HMAC-SHA256 over `msg_id.timestamp.body`, `v1,<base64>`) and its verification (used by the
//! tests and the test receiver). Which secrets sign a delivery (one, or two while a secret is
//! rotated) and when is decided by the caller; the header names and the HTTP request are
//! `send`'s.

use std::fmt;

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The literal prefix of a secret's text form (Standard Webhooks: `whsec_` + base64).
const PREFIX: &str = "whsec_";

/// The fewest bytes a secret may decode to (Standard Webhooks: secrets are 24 to 64 bytes).
const MIN_BYTES: usize = 24;

/// The most bytes a secret may decode to.
const MAX_BYTES: usize = 64;

/// Standard-alphabet base64 that accepts its input with or without `=` padding: secrets are
/// copied around by hand and the padding is often lost on the way.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The scheme tag before each signature in the header (Standard Webhooks' only version).
const VERSION: &str = "v1,";

/// A signing secret: the decoded bytes of a `whsec_…` value. Its `Debug` hides the bytes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(Vec<u8>);

impl Secret {
    /// Parses a secret's text form: the literal prefix `whsec_`, then standard base64 (padded
    /// or not) of 24 to 64 bytes. The error says which rule failed and never contains the value.
    pub(crate) fn parse(value: &str) -> Result<Secret, String> {
        let Some(encoded) = value.strip_prefix(PREFIX) else {
            return Err(format!("the secret must start with `{PREFIX}`"));
        };
        let bytes =
            LENIENT.decode(encoded).map_err(|_| format!("the secret after `{PREFIX}` is not standard base64"))?;
        if !(MIN_BYTES..=MAX_BYTES).contains(&bytes.len()) {
            return Err(format!("the secret is {} bytes, need {MIN_BYTES} to {MAX_BYTES}", bytes.len()));
        }
        Ok(Secret(bytes))
    }

    /// The HMAC-SHA256 state keyed by this secret, fed the signed content
    /// `msg_id.timestamp.body` (Standard Webhooks: id, `.`, Unix seconds, `.`, the raw body).
    fn mac(&self, msg_id: &str, timestamp_s: u64, body: &[u8]) -> Hmac<Sha256> {
        // Invariant: HMAC accepts a key of any length (longer keys are hashed, shorter
        // padded), so `new_from_slice` cannot fail for it.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC-SHA256 accepts a key of any length");
        mac.update(msg_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp_s.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<{} bytes redacted>)", self.0.len())
    }
}

/// The `webhook-signature` value for one delivery: `v1,<base64 of HMAC-SHA256>` per secret,
/// joined by a single space. Standard Webhooks lets a receiver accept any one of them, which
/// is how a secret is rotated without a window of failed deliveries.
pub(crate) fn signature_header(secrets: &[&Secret], msg_id: &str, timestamp_s: u64, body: &[u8]) -> String {
    let signatures: Vec<String> = secrets
        .iter()
        .map(|secret| {
            let tag = secret.mac(msg_id, timestamp_s, body).finalize().into_bytes();
            format!("{VERSION}{}", STANDARD.encode(tag))
        })
        .collect();
    signatures.join(" ")
}

/// Whether `header` (a `webhook-signature` value) holds a `v1` signature of this delivery made
/// with `secret`. Each candidate is compared in constant time; other versions are skipped.
#[cfg(test)]
pub(crate) fn verify(secret: &Secret, msg_id: &str, timestamp_s: u64, body: &[u8], header: &str) -> bool {
    let mac = secret.mac(msg_id, timestamp_s, body);
    header
        .split(' ')
        .filter_map(|candidate| candidate.strip_prefix(VERSION))
        .filter_map(|encoded| STANDARD.decode(encoded).ok())
        .any(|tag| mac.clone().verify_slice(&tag).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (checked with Python's `hmac`).
    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SPEC_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const SPEC_TIME: u64 = 1_614_265_330;
    const SPEC_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SPEC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    /// A second secret (bytes 0..32) and its signature of the same delivery, from Python.
    const OTHER_SECRET: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const OTHER_SIGNATURE: &str = "v1,O4Gjv1HqPqsMrjmczoggs/sWA8gZD0VyHG+fLh4+ktI=";

    fn secret(value: &str) -> Secret {
        Secret::parse(value).expect("a valid test secret")
    }

    #[test]
    fn signs_the_specification_example() {
        let secret = secret(SPEC_SECRET);
        let header = signature_header(&[&secret], SPEC_ID, SPEC_TIME, SPEC_BODY);
        assert_eq!(header, SPEC_SIGNATURE);
        assert!(verify(&secret, SPEC_ID, SPEC_TIME, SPEC_BODY, &header));
    }

    #[test]
    fn verify_rejects_any_change() {
        let secret = secret(SPEC_SECRET);
        assert!(!verify(&secret, "msg_other", SPEC_TIME, SPEC_BODY, SPEC_SIGNATURE));
        assert!(!verify(&secret, SPEC_ID, SPEC_TIME + 1, SPEC_BODY, SPEC_SIGNATURE));
        assert!(!verify(&secret, SPEC_ID, SPEC_TIME, b"{}", SPEC_SIGNATURE));
        let wrong_version = SPEC_SIGNATURE.replacen("v1,", "v1a,", 1);
        assert!(!verify(&secret, SPEC_ID, SPEC_TIME, SPEC_BODY, &wrong_version));
        assert!(!verify(&secret, SPEC_ID, SPEC_TIME, SPEC_BODY, "v1,not-base64!"));
        assert!(!verify(&secret, SPEC_ID, SPEC_TIME, SPEC_BODY, ""));
    }

    #[test]
    fn signs_with_every_secret_during_rotation() {
        let (old, new) = (secret(SPEC_SECRET), secret(OTHER_SECRET));
        let header = signature_header(&[&old, &new], SPEC_ID, SPEC_TIME, SPEC_BODY);
        assert_eq!(header, format!("{SPEC_SIGNATURE} {OTHER_SIGNATURE}"));
        assert!(verify(&old, SPEC_ID, SPEC_TIME, SPEC_BODY, &header));
        assert!(verify(&new, SPEC_ID, SPEC_TIME, SPEC_BODY, &header));
        let third = secret("whsec_MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u");
        assert!(!verify(&third, SPEC_ID, SPEC_TIME, SPEC_BODY, &header));
    }

    #[test]
    fn parse_accepts_padded_and_unpadded_base64() {
        assert_eq!(secret(OTHER_SECRET), secret(OTHER_SECRET.trim_end_matches('=')));
    }

    #[test]
    fn parse_enforces_the_length() {
        let short = format!("whsec_{}", STANDARD.encode([7u8; 23]));
        let error = Secret::parse(&short).expect_err("23 bytes is too short");
        assert_eq!(error, "the secret is 23 bytes, need 24 to 64");
        let long = format!("whsec_{}", STANDARD.encode([7u8; 65]));
        let error = Secret::parse(&long).expect_err("65 bytes is too long");
        assert_eq!(error, "the secret is 65 bytes, need 24 to 64");
        for bytes in [24, 64] {
            assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode(vec![7u8; bytes]))).is_ok());
        }
    }

    #[test]
    fn parse_requires_the_prefix_and_base64() {
        let bare = SPEC_SECRET.trim_start_matches("whsec_");
        let error = Secret::parse(bare).expect_err("no prefix");
        assert!(error.contains("whsec_") && !error.contains(bare), "{error}");
        let error = Secret::parse("whsec_not*base64*at*all*here!!").expect_err("bad base64");
        assert!(error.contains("not standard base64"), "{error}");
        assert!(!error.contains("not*base64"), "the error echoes the secret: {error}");
        assert!(Secret::parse("WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
    }

    #[test]
    fn debug_hides_the_bytes() {
        let shown = format!("{:?}", secret(SPEC_SECRET));
        assert_eq!(shown, "Secret(<24 bytes redacted>)");
    }
}
