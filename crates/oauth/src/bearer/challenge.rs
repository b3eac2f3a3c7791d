//! `WWW-Authenticate: Bearer …` challenges (RFC 6750 §3, RFC 9728 §5.1), built once per
//! authenticator and mapped from a [`TokenError`] in one place.
//!
//! - No token: 401 `Bearer resource_metadata="…"` (plus `scope="…"` when scopes are required:
//!   MCP says the 401 SHOULD carry them). No `error`: RFC 6750 §3.1 says a request without
//!   credentials gets no error code.
//! - A token that does not hold: 401 with `error="invalid_token", error_description="…"`.
//! - A valid token without the required scopes: 403 `error="insufficient_scope",
//!   scope="…"` with every required scope in one challenge (MCP authorization, "Scope
//!   Challenge Handling").

use mcp_fleet_server::auth::AuthError;
use mcp_fleet_server::auth::www_authenticate::{insufficient_scope, quote, resource_metadata_base};

use super::TokenError;

/// The challenges of one authenticator.
#[derive(Debug, Clone)]
pub(crate) struct Challenges {
    /// `Bearer resource_metadata="…"`.
    base: String,
    /// `scope="…"`, when scopes are required.
    scope: Option<String>,
}

impl Challenges {
    pub(crate) fn new(resource_metadata_url: &str, required_scopes: &[String]) -> Self {
        let scope = (!required_scopes.is_empty()).then(|| format!("scope={}", quote(&required_scopes.join(" "))));
        Challenges { base: resource_metadata_base(resource_metadata_url), scope }
    }

    /// 401 for a request without a bearer token.
    pub(crate) fn missing_token(&self) -> AuthError {
        AuthError::unauthenticated(match &self.scope {
            Some(scope) => format!("{}, {scope}", self.base),
            None => self.base.clone(),
        })
    }

    /// 403 `insufficient_scope` naming exactly `scopes` (an operation's own requirement).
    pub(crate) fn insufficient(&self, scopes: &[&str]) -> AuthError {
        insufficient_scope(Some(&self.base), scopes)
    }

    /// The refusal for a token that failed verification.
    pub(crate) fn refuse(&self, error: &TokenError) -> AuthError {
        match error {
            TokenError::InsufficientScope => {
                let scope = self.scope.as_deref().unwrap_or("scope=\"\"");
                AuthError::forbidden(format!("{}, error=\"insufficient_scope\", {scope}", self.base))
            }
            other => AuthError::unauthenticated(format!(
                "{}, error=\"invalid_token\", error_description={}",
                self.base,
                quote(&other.to_string())
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;

    use super::*;

    const URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

    #[test]
    fn missing_token_with_and_without_scopes() {
        let plain = Challenges::new(URL, &[]).missing_token();
        assert_eq!(plain.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(plain.challenge(), format!("Bearer resource_metadata=\"{URL}\""));
        let scoped = Challenges::new(URL, &["a:b".into(), "c".into()]).missing_token();
        assert_eq!(scoped.challenge(), format!("Bearer resource_metadata=\"{URL}\", scope=\"a:b c\""));
    }

    #[test]
    fn invalid_token_and_insufficient_scope() {
        let challenges = Challenges::new(URL, &["mcp:write".into()]);
        let expired = challenges.refuse(&TokenError::Expired);
        assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            expired.challenge(),
            format!("Bearer resource_metadata=\"{URL}\", error=\"invalid_token\", error_description=\"token expired\"")
        );
        let scope = challenges.refuse(&TokenError::InsufficientScope);
        assert_eq!(scope.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            scope.challenge(),
            format!("Bearer resource_metadata=\"{URL}\", error=\"insufficient_scope\", scope=\"mcp:write\"")
        );
    }

    #[test]
    fn an_operation_may_ask_for_its_own_scopes() {
        let challenge = Challenges::new(URL, &["mcp:use".into()]).insufficient(&["mcp:use", "files:write"]);
        assert_eq!(challenge.status(), StatusCode::FORBIDDEN);
        assert!(challenge.challenge().ends_with(r#"error="insufficient_scope", scope="mcp:use files:write""#));
    }

    /// Whatever the metadata URL or the error holds, the challenge is a valid header value
    /// (RFC 9110 quoting itself is tested with `www_authenticate::quote`).
    #[test]
    fn challenges_always_serialise() {
        for error in [TokenError::Malformed, TokenError::MissingClaim("sub"), TokenError::KeysUnavailable] {
            let challenge = Challenges::new("https://x/\"evil\"", &[]).refuse(&error);
            assert!(http::HeaderValue::from_str(challenge.challenge()).is_ok(), "{challenge:?}");
        }
    }
}
