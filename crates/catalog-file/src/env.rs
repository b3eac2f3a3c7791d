//! `${NAME}` references to environment variables in HTTP header values, resolved once at
//! load time so a secret never has to be written into the catalog file (a Kubernetes Secret
//! becomes an env var; the ConfigMap holds only `Bearer ${MCP_CATALOG_API_TOKEN}`). Only
//! variables the [`EnvAllowlist`] allows are read: the pod's other variables (the bus URL,
//! cloud credentials) stay out of reach of whoever edits the file.
//!
//! The lookup is a function so tests and callers can supply their own environment without
//! touching the process's (`std::env::set_var` is `unsafe` in edition 2024).

use crate::confine::EnvAllowlist;
use crate::error::Problem;

/// Replace every `${NAME}` in `value` with `lookup(NAME)`. `NAME` is `[A-Za-z_][A-Za-z0-9_]*`;
/// a `$` not followed by `{` is kept as it is. A name `allow` does not allow is an error
/// before it is looked up; a missing variable is an error, never an empty string: a header
/// silently sent as `Bearer ` is worse than a refused catalog.
pub(crate) fn expand(
    value: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    allow: &EnvAllowlist,
) -> Result<String, Problem> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| Problem::EnvSyntax(format!("`${{` without `}}` in {value:?}")))?;
        let name = &after[..end];
        if !is_env_name(name) {
            return Err(Problem::EnvSyntax(format!("{name:?} is not a variable name")));
        }
        if !allow.allows(name) {
            return Err(Problem::EnvNotAllowed { name: name.to_owned(), allowed: allow.to_string() });
        }
        let resolved = lookup(name).ok_or_else(|| Problem::MissingEnv(name.to_owned()))?;
        out.push_str(&resolved);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The process environment, as a lookup for [`expand`]. A variable that is set but not valid
/// Unicode counts as missing.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN" || name == "MCP_CATALOG_T").then(|| "s3cr3t".to_owned())
    }

    fn expand(value: &str) -> Result<String, Problem> {
        super::expand(value, &env, &EnvAllowlist::default().widen(["TOKEN", "NOPE"]))
    }

    #[test]
    fn expands_known_variables_and_keeps_lone_dollars() {
        assert_eq!(expand("Bearer ${TOKEN}").unwrap(), "Bearer s3cr3t");
        assert_eq!(expand("$5 ${TOKEN}${MCP_CATALOG_T} $").unwrap(), "$5 s3cr3ts3cr3t $");
        assert_eq!(expand("plain").unwrap(), "plain");
    }

    #[test]
    fn refuses_missing_variables_and_bad_syntax() {
        assert_eq!(expand("${NOPE}").unwrap_err(), Problem::MissingEnv("NOPE".into()));
        assert!(matches!(expand("${TOKEN"), Err(Problem::EnvSyntax(_))));
        assert!(matches!(expand("${1X}"), Err(Problem::EnvSyntax(_))));
        assert!(matches!(expand("${}"), Err(Problem::EnvSyntax(_))));
    }

    #[test]
    fn refuses_variables_outside_the_allowlist() {
        let refused = Problem::EnvNotAllowed { name: "HOME".into(), allowed: "MCP_CATALOG_*, TOKEN, NOPE".into() };
        assert_eq!(expand("x ${HOME}").unwrap_err(), refused);
    }
}
