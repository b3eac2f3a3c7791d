//! DNS-rebinding defence (HTTP-4): `Origin` and optional `Host` allow-lists, compared by
//! hostname, port-agnostic. An absent Origin passes (non-browser clients send none); `null` or
//! an unparsable Origin is refused. The host is the `Host` header, or for HTTP/2 (which has
//! none) the `:authority` pseudo-header, which hyper puts in the request URI.

use http::HeaderMap;
use http::request::Parts;

/// Whether the request's Origin (and host, when a list is configured) is allowed.
pub(crate) fn origin_allowed(parts: &Parts, origins: Option<&[String]>, hosts: Option<&[String]>) -> bool {
    let authority = parts.uri.authority().map(|a| a.as_str());
    is_allowed(&parts.headers, authority, origins, hosts)
}

fn is_allowed(
    headers: &HeaderMap,
    authority: Option<&str>,
    origins: Option<&[String]>,
    hosts: Option<&[String]>,
) -> bool {
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
        let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).or(authority).map(hostname);
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
        let ok = |hs: &[(&str, &str)]| is_allowed(&h(hs), None, Some(&local), None);
        assert!(ok(&[]));
        assert!(ok(&[("origin", "http://localhost:3000")]));
        assert!(ok(&[("origin", "http://[::1]:8080")]));
        assert!(ok(&[("origin", "https://127.0.0.1")]));
        assert!(!ok(&[("origin", "http://evil.example.com")]));
        assert!(!ok(&[("origin", "null")]));
        assert!(!ok(&[("origin", "http://localhost.evil.com")]));
        let hosts = vec!["localhost".to_string()];
        assert!(is_allowed(&h(&[("host", "localhost:8080")]), None, None, Some(&hosts)));
        assert!(!is_allowed(&h(&[("host", "evil.example.com")]), None, None, Some(&hosts)));
        assert!(!is_allowed(&h(&[]), None, None, Some(&hosts)));
    }

    #[test]
    fn an_http2_request_without_host_is_judged_by_its_authority() {
        let hosts = vec!["mcp.example.com".to_string()];
        let request = |uri: &str| http::Request::post(uri).body(()).unwrap().into_parts().0;
        assert!(origin_allowed(&request("http://mcp.example.com:8080/mcp"), None, Some(&hosts)));
        assert!(!origin_allowed(&request("http://evil.example.com/mcp"), None, Some(&hosts)));
        assert!(!origin_allowed(&request("/mcp"), None, Some(&hosts)), "neither Host nor :authority");
    }
}
