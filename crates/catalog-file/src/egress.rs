//! [`AddressPolicy`]: the addresses an `http` tool may not connect to, and the DNS resolver
//! that enforces it after resolution. Whoever edits the catalog file should not be able to
//! point a tool at the pod's cloud metadata endpoint (instance credentials) or anything else
//! link-local, so by default those are refused:
//!
//! - the link-local ranges 169.254.0.0/16 (AWS, Azure, GCP and OpenStack metadata at
//!   169.254.169.254) and fe80::/10;
//! - the metadata addresses outside them: fd00:ec2::254 (AWS over IPv6) and 100.100.100.200
//!   (Alibaba Cloud), and the name metadata.google.internal;
//! - IPv4-mapped IPv6 forms of all of these (`::ffff:169.254.169.254`).
//!
//! The check happens twice, both before any connection: on the URL's host when it is an IP
//! literal or a refused name (a literal never reaches the resolver; a proxy resolves names
//! itself), and on every address a name resolves to ([`GuardedResolver`]), so a name that
//! resolves to 169.254.169.254 is refused as well. A redirect is only followed within the
//! URL's origin (`http_tool`), and every new connection is resolved through the same
//! resolver. [`Confinement::allow_link_local`](crate::Confinement::allow_link_local) turns it
//! all off.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Names refused before resolution (they resolve to a metadata address, or to an internal
/// resolver's idea of one).
const REFUSED_NAMES: &[&str] = &["metadata.google.internal"];

/// The addresses and names an `http` tool may not reach. The default refuses link-local and
/// cloud metadata addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddressPolicy {
    ranges: Vec<Range>,
    names: &'static [&'static str],
}

impl AddressPolicy {
    /// The default policy, or — with `allow_link_local` — one that refuses nothing.
    pub(crate) fn new(allow_link_local: bool) -> AddressPolicy {
        if allow_link_local {
            return AddressPolicy { ranges: Vec::new(), names: &[] };
        }
        let ranges = vec![
            Range::v4(Ipv4Addr::new(169, 254, 0, 0), 16),
            Range::v6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
            Range::v6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254), 128),
            Range::v4(Ipv4Addr::new(100, 100, 100, 200), 32),
        ];
        AddressPolicy { ranges, names: REFUSED_NAMES }
    }

    /// A policy refusing exactly `ranges` (`(address, prefix length)`): tests use it to refuse
    /// loopback, where a listener can prove that nothing connected.
    #[cfg(test)]
    pub(crate) fn refusing(ranges: &[(IpAddr, u8)]) -> AddressPolicy {
        AddressPolicy { ranges: ranges.iter().map(|&(net, prefix)| Range { net, prefix }).collect(), names: &[] }
    }

    /// Whether `ip` (IPv4-mapped IPv6 taken as the IPv4 address) is refused.
    pub(crate) fn refuses(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.ranges.iter().any(|range| range.contains(ip))
    }

    /// Whether the host name `name` is refused before it is resolved.
    fn refuses_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.');
        self.names.iter().any(|refused| refused.eq_ignore_ascii_case(name))
    }

    /// `Err` with the reason when `url`'s host — an IP literal or a refused name — may not be
    /// reached. Names are checked again, after resolution, by [`GuardedResolver`].
    pub(crate) fn check_url(&self, url: &reqwest::Url) -> Result<(), Refused> {
        let Some(host) = url.host_str() else { return Ok(()) };
        // An IPv6 literal comes bracketed; the URL parser already normalized IPv4 forms.
        let refused = match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => self.refuses(ip),
            Err(_) => self.refuses_name(host),
        };
        if refused { Err(Refused(host.to_owned())) } else { Ok(()) }
    }
}

impl Default for AddressPolicy {
    fn default() -> Self {
        AddressPolicy::new(false)
    }
}

/// An address range: `net` with its first `prefix` bits significant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    net: IpAddr,
    prefix: u8,
}

impl Range {
    fn v4(net: Ipv4Addr, prefix: u8) -> Range {
        Range { net: IpAddr::V4(net), prefix }
    }

    fn v6(net: Ipv6Addr, prefix: u8) -> Range {
        Range { net: IpAddr::V6(net), prefix }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix.min(32))).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix.min(128))).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// A host an `http` tool may not reach (the error in the tool's result and the log names it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused(String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a link-local or cloud metadata address, which http tools may not reach \
             (--catalog-http-allow-link-local allows it)",
            self.0
        )
    }
}

impl std::error::Error for Refused {}

/// The system resolver (`getaddrinfo`, as reqwest's default), minus the addresses the policy
/// refuses; a name left with none is an error, so no connection is attempted.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    pub(crate) fn new(policy: Arc<AddressPolicy>) -> GuardedResolver {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let host = name.as_str();
            if policy.refuses_name(host) {
                return Err(Refused(host.to_owned()).into());
            }
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved.iter().copied().filter(|a| !policy.refuses(a.ip())).collect();
            if allowed.is_empty() && !resolved.is_empty() {
                return Err(Refused(format!("{host} ({})", resolved[0].ip())).into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_link_local_addresses_are_refused_by_default() {
        let policy = AddressPolicy::default();
        for refused in [
            "169.254.169.254",
            "169.254.0.1",
            "100.100.100.200",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:169.254.169.254",
            "febf::1",
        ] {
            assert!(policy.refuses(refused.parse().unwrap()), "{refused}");
        }
        for allowed in
            ["10.0.0.1", "100.100.100.201", "169.253.255.255", "fd00:ec2::255", "fec0::1", "127.0.0.1", "::1"]
        {
            assert!(!policy.refuses(allowed.parse().unwrap()), "{allowed}");
        }
        for url in ["http://169.254.169.254/latest", "http://[fd00:ec2::254]/", "http://METADATA.google.internal./x"] {
            assert!(policy.check_url(&url.parse().unwrap()).is_err(), "{url}");
        }
        assert!(policy.check_url(&"http://orders.internal/x".parse().unwrap()).is_ok());
    }

    #[test]
    fn allow_link_local_refuses_nothing() {
        let policy = AddressPolicy::new(true);
        assert!(!policy.refuses("169.254.169.254".parse().unwrap()));
        assert!(policy.check_url(&"http://metadata.google.internal/".parse().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn a_name_resolving_only_to_refused_addresses_is_an_error() {
        let policy = AddressPolicy::refusing(&[("127.0.0.0".parse().unwrap(), 8), ("::1".parse().unwrap(), 128)]);
        let resolver = GuardedResolver::new(Arc::new(policy));
        let err = resolver.resolve("localhost".parse().unwrap()).await.err().expect("refused");
        assert!(err.to_string().contains("localhost (") && err.to_string().contains("may not reach"), "{err}");
        let open = GuardedResolver::new(Arc::new(AddressPolicy::default()));
        let addrs: Vec<_> = open.resolve("localhost".parse().unwrap()).await.expect("resolves").collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty(), "{addrs:?}");
    }
}
