//! DNS-rebinding defence (HTTP-4): `Origin` and optional `Host` allow-lists, compared by
//! hostname, port-agnostic. An absent Origin passes (non-browser clients send none); `null` or
//! an unparsable Origin is refused.

use http::HeaderMap;

/// Whether the request's Origin (and Host, when a list is configured) is allowed.
pub(crate) fn origin_allowed(headers: &HeaderMap, origins: Option<&[String]>, hosts: Option<&[String]>) -> bool {
    if let Some(allowed) = origins
        && let Some(origin) = headers.get(http::header::ORIGIN)
    {
        let host = origin.to_str().ok().and_then(|o| o.split_once("://")).map(|(_, rest)| rest);
        match host.map(hostname) {
            Some(h) if allowed.iter().any(|a| a.eq_ignore_ascii_case(h)) => {}
            _ => return false,
        }
    }
    if let Some(allowed) = hosts {
        let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).map(hostname);
        return host.is_some_and(|h| allowed.iter().any(|a| a.eq_ignore_ascii_case(h)));
    }
    true
}

/// The hostname of `host[:port][/path]`, keeping IPv6 brackets.
fn hostname(authority: &str) -> &str {
    let authority = authority.split('/').next().unwrap_or(authority);
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.split(':').next().unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect()
    }

    #[test]
    fn allows_local_origins_and_refuses_others() {
        let local: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).to_vec();
        let ok = |hs: &[(&str, &str)]| origin_allowed(&h(hs), Some(&local), None);
        assert!(ok(&[]));
        assert!(ok(&[("origin", "http://localhost:3000")]));
        assert!(ok(&[("origin", "http://[::1]:8080")]));
        assert!(ok(&[("origin", "https://127.0.0.1")]));
        assert!(!ok(&[("origin", "http://evil.example.com")]));
        assert!(!ok(&[("origin", "null")]));
        assert!(!ok(&[("origin", "http://localhost.evil.com")]));
        let hosts = vec!["localhost".to_string()];
        assert!(origin_allowed(&h(&[("host", "localhost:8080")]), None, Some(&hosts)));
        assert!(!origin_allowed(&h(&[("host", "evil.example.com")]), None, Some(&hosts)));
        assert!(!origin_allowed(&h(&[]), None, Some(&hosts)));
    }
}
