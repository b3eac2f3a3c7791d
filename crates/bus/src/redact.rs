//! Secrets out of logs, `Debug` output, error messages and admin answers: the one place that
//! decides what of a URL is secret, so every crate that prints a bus URL, a backend URL or an
//! error about one says the same thing — `redis://default:***@redis:6379/0`.
//!
//! - [`redact_url`]: the URL with its userinfo password (or a lone userinfo, which NATS reads
//!   as a token) and the value of every query parameter not known to be harmless replaced by
//!   [`MASK`]: `token=`, `creds=`, `sentinel_password=`, but also a misspelt
//!   `sentinel_pasword=` or a backend's `code=`/`sig=`. Only the buses' own tuning parameters
//!   ([`HARMLESS_PARAMETERS`]) stay readable. Works on the URL lists the buses take
//!   (`nats://u:p@a:4222,b:4222`), which are not single URLs.
//! - [`scrub`] with [`url_secrets`]: remove those same secrets from any text — an error a
//!   backend formatted around the URL it was given.
//! - [`redact_headers`]: a `name=value,…` header list (`OTEL_EXPORTER_OTLP_HEADERS`) with every
//!   value masked: which header carries a credential is not knowable, its name is.
//! - [`Redacted`] and [`SecretUrl`]: values whose `Display` and `Debug` never show the secret,
//!   for configuration structs and `tracing` fields.
//!
//! ```
//! use mcp_fleet_bus::redact::{redact_url, SecretUrl};
//! assert_eq!(redact_url("redis://:hunter2@redis:6379/0"), "redis://:***@redis:6379/0");
//! assert_eq!(redact_url("nats://a:4222?token=s3cr3t&stream=S"), "nats://a:4222?token=***&stream=S");
//! let url: SecretUrl = "rediss://app:hunter2@redis/0".parse().unwrap();
//! assert_eq!(format!("{url} {url:?}"), r#"rediss://app:***@redis/0 "rediss://app:***@redis/0""#);
//! assert_eq!(url.expose(), "rediss://app:hunter2@redis/0");
//! ```
//!
//! Redaction errs on the side of hiding: everything between `://` and the last `@` before the
//! query is userinfo, so a path that contains `@` loses its head too (in a log line only); a
//! `?` before the last `@` may be a password's, so both readings are hidden.

use std::fmt;
use std::ops::Range;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Query parameters whose values [`redact_url`] shows: the Redis and NATS buses' tuning
/// options. Any other parameter's value may be a credential.
pub const HARMLESS_PARAMETERS: [&str; 10] = [
    "stream",
    "maxlen",
    "mode",
    "prefix",
    "max_messages",
    "max_age_secs",
    "replicas",
    "sentinel_username",
    "protocol",
    "db",
];

/// Secrets shorter than this are not scrubbed from free text (masking every `a` of a message
/// would make it unreadable, and a one-letter secret protects nothing).
const MIN_SCRUBBED_LEN: usize = 3;

/// `url` with its secrets replaced by [`MASK`] (see the module doc for which).
pub fn redact_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut last = 0;
    for span in secret_spans(url) {
        out.push_str(&url[last..span.start]);
        out.push_str(MASK);
        last = span.end;
    }
    out.push_str(&url[last..]);
    out
}

/// The secrets [`redact_url`] hides, as written and percent-decoded (a backend may quote
/// either), and the pieces a URL parser may cut one into — at a `?`, `#`, `&`, `=` or `/`
/// written unencoded in a password, a backend's parser ends the userinfo there and may quote
/// the rest as a query parameter or a path — for [`scrub`].
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    for span in secret_spans(url) {
        let raw = &url[span];
        let decoded = percent_decode(raw);
        if decoded != raw {
            secrets.push(decoded);
        }
        secrets.push(raw.to_owned());
        // A parameter's name among the pieces is not the secret (and `stream` must stay readable).
        let pieces = raw
            .split(['?', '#', '&', '=', '/'])
            .filter(|piece| piece.len() < raw.len() && !HARMLESS_PARAMETERS.contains(piece));
        secrets.extend(pieces.map(str::to_owned));
    }
    secrets
}

/// `text` with every occurrence of each of `secrets` (at least 3 characters long) replaced by
/// [`MASK`], longest first.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut secrets: Vec<&String> = secrets.iter().filter(|s| s.chars().count() >= MIN_SCRUBBED_LEN).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.into_iter().fold(text.to_owned(), |text, secret| text.replace(secret.as_str(), MASK))
}

/// A `name=value,name=value` list with every value masked: `api-key=***,x-team=***`.
pub fn redact_headers(list: &str) -> String {
    list.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) => format!("{}={MASK}", name.trim()),
            None => MASK.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Byte ranges of `url` that are secret, in order, not overlapping.
///
/// A `?` before the last `@` is either a password's (`redis://u:pa?ss@h/0`, which a backend may
/// well be given) or a query value's (`?user=a@b`): both readings are taken and every range
/// either finds secret is hidden, so a password is never shown for looking like a query.
fn secret_spans(url: &str) -> Vec<Range<usize>> {
    let first_query = url.find('?');
    let mut spans = spans_with_query_at(url, first_query.unwrap_or(url.len()));
    if let (Some(query), Some(at)) = (first_query, url.rfind('@'))
        && query < at
    {
        let after_userinfo = url[at..].find('?').map_or(url.len(), |i| at + i);
        spans.extend(spans_with_query_at(url, after_userinfo));
        spans.sort_by_key(|r| r.start);
        spans = spans.into_iter().fold(Vec::new(), |mut merged: Vec<Range<usize>>, span| {
            match merged.last_mut() {
                Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
                _ => merged.push(span),
            }
            merged
        });
    }
    spans
}

/// [`secret_spans`] when the query starts at `head_end` (`url.len()`: no query).
fn spans_with_query_at(url: &str, head_end: usize) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut start = 0;
    for segment in url[..head_end].split(',') {
        spans.extend(userinfo_secret(segment).map(|r| r.start + start..r.end + start));
        start += segment.len() + 1;
    }
    if head_end < url.len() {
        let query_end = url.find('#').filter(|&i| i > head_end).unwrap_or(url.len());
        let mut start = head_end + 1;
        for pair in url[head_end + 1..query_end].split('&') {
            if let Some((key, value)) = pair.split_once('=')
                && !value.is_empty()
                && is_secret_key(key)
            {
                let value_start = start + key.len() + 1;
                spans.push(value_start..value_start + value.len());
            }
            start += pair.len() + 1;
        }
    }
    spans
}

/// The secret part of one server's userinfo: the password of `user:password@`, or all of a
/// lone `token@`.
fn userinfo_secret(segment: &str) -> Option<Range<usize>> {
    let authority = segment.find("://").map_or(0, |i| i + 3);
    let at = authority + segment[authority..].rfind('@')?;
    let userinfo = &segment[authority..at];
    let secret = match userinfo.find(':') {
        Some(colon) => authority + colon + 1..at,
        None => authority..at,
    };
    (!secret.is_empty()).then_some(secret)
}

fn is_secret_key(key: &str) -> bool {
    !HARMLESS_PARAMETERS.contains(&key.to_ascii_lowercase().as_str())
}

/// `%XX` sequences decoded (invalid ones and non-UTF-8 results kept as they are).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// A secret value: `Display` and `Debug` print [`MASK`]; [`expose`](Redacted::expose) is the
/// one way to the value, easy to find in a review. Parses like its value (command-line flags).
///
/// ```
/// use mcp_fleet_bus::redact::Redacted;
/// let token: Redacted<String> = "s3cr3t".parse().unwrap();
/// assert_eq!(format!("{token} {token:?} {:?}", Some(&token)), "*** *** Some(***)");
/// assert_eq!(token.expose(), "s3cr3t");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redacted<T>(T);

impl<T> Redacted<T> {
    /// Wrap `value`.
    pub fn new(value: T) -> Self {
        Redacted(value)
    }

    /// The secret itself.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl<T> fmt::Display for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MASK)
    }
}

impl<T: std::str::FromStr> std::str::FromStr for Redacted<T> {
    type Err = T::Err;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Redacted)
    }
}

/// A URL that may carry credentials: `Display` and `Debug` show it through [`redact_url`];
/// [`expose`](SecretUrl::expose) is the URL to connect to.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    /// Wrap `url`.
    pub fn new(url: impl Into<String>) -> Self {
        SecretUrl(url.into())
    }

    /// The URL with its secrets.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL without them (what `Display` prints).
    pub fn redacted(&self) -> String {
        redact_url(&self.0)
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.redacted(), f)
    }
}

impl std::str::FromStr for SecretUrl {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(SecretUrl(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_tokens_and_credential_parameters_are_masked() {
        for (url, redacted) in [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
            ("rediss://user:pw@h/0?stream=s&maxlen=9", "rediss://user:***@h/0?stream=s&maxlen=9"),
            ("redis://user:@h/0", "redis://user:@h/0"),
            ("redis://:p/w@d@h/0", "redis://:***@h/0"),
            ("nats://tok@a:4222", "nats://***@a:4222"),
            ("nats://u:p@a:4222,nats://v:q@b:4222", "nats://u:***@a:4222,nats://v:***@b:4222"),
            ("nats://a:4222,b:4222?token=T0&mode=core", "nats://a:4222,b:4222?token=***&mode=core"),
            ("nats://a?creds=/x/y.creds", "nats://a?creds=***"),
            (
                "redis+sentinel://u:p@s1:26379,s2:26379/m?sentinel_password=sp&sentinel_username=su",
                "redis+sentinel://u:***@s1:26379,s2:26379/m?sentinel_password=***&sentinel_username=su",
            ),
            (
                "https://h/x?API_KEY=k&code=c&sig=s&Stream=x#frag",
                "https://h/x?API_KEY=***&code=***&sig=***&Stream=x#frag",
            ),
            ("redis://h/0?sentinel_pasword=typo&maxlen=5&flag", "redis://h/0?sentinel_pasword=***&maxlen=5&flag"),
            // A `?` in a password: hidden with the rest of it (and what may be a query after it).
            ("redis://u:pa?ss@h:6379/0", "redis://u:***@h:6379/0"),
            ("redis://u:pa?ss@h/0?stream=s&token=t", "redis://u:***@h/0?stream=***&token=***"),
            ("nats://u:p?w@a:4222,nats://v:q@b:4222", "nats://u:***@a:4222,nats://v:***@b:4222"),
            // An `@` in a query value: more is hidden than needed, nothing is shown that may be a secret.
            ("redis://h/0?stream=a@b&token=t", "redis://***@b&token=***"),
            ("http://collector:4318", "http://collector:4318"),
            ("memory://", "memory://"),
            ("", ""),
        ] {
            assert_eq!(redact_url(url), redacted, "{url}");
        }
    }

    #[test]
    fn scrub_removes_the_secrets_of_a_url_from_a_message_as_written_and_decoded() {
        let url = "redis://u:p%40ss@h/0?token=tok3n";
        let secrets = url_secrets(url);
        let message = "connect to u:p@ss@h failed (token tok3n, password p%40ss)";
        assert_eq!(scrub(message, &secrets), "connect to u:***@h failed (token ***, password ***)");
        assert_eq!(scrub("no secret here", &url_secrets("redis://:ab@h")), "no secret here", "too short to scrub");
        let secrets = url_secrets("redis://u:pa?ss@h/0");
        assert_eq!(scrub("invalid port in u:pa?ss@h", &secrets), "invalid port in u:***@h");
        // A parser that ends the userinfo at the `?` quotes the rest as a parameter.
        let secrets = url_secrets("nats://u:pa?S3CR3T@h:4222");
        let message = "unknown nats URL parameter \"S3CR3T@h:4222\"";
        assert_eq!(scrub(message, &secrets), "unknown nats URL parameter \"***@h:4222\"");
        let secrets = url_secrets("nats://u:pa?stream=S3CR3T@h:4222");
        assert_eq!(
            scrub("invalid jetstream stream name \"S3CR3T@h\"", &secrets),
            "invalid jetstream stream name \"***@h\""
        );
    }

    #[test]
    fn header_lists_keep_names_only() {
        assert_eq!(redact_headers("api-key=s3cr3t, x-team = infra,bare"), "api-key=***,x-team=***,***");
        assert_eq!(redact_headers(""), "");
    }

    #[test]
    fn wrappers_never_print_the_secret() {
        let url = SecretUrl::new("nats://a?token=T0K3N");
        assert_eq!(format!("{url} {url:?}"), r#"nats://a?token=*** "nats://a?token=***""#);
        let token = Redacted::new("T0K3N".to_owned());
        assert!(!format!("{token} {token:?}").contains("T0K3N"));
    }
}
