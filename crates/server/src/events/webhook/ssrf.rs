//! Which addresses a webhook delivery may connect to: the guard against server-side request
//! forgery, where a subscriber names a URL that reaches into the fleet's own network.
//!
//! Owns [`Network`] (a CIDR block, the operator's allow-list entries) and [`refusal`]: an
//! address is refused unless it is globally reachable per the IANA IPv4 and IPv6
//! special-purpose address registries (RFC 6890 and successors), or the operator allowed it.
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are judged as their IPv4 address everywhere,
//! and the IPv4 address inside NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses is
//! judged too. Resolving names and connecting to only the checked addresses is `send`'s job.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A block of IPv4 or IPv6 addresses in CIDR form (`10.0.0.0/8`, `fd00::/8`, or a bare
/// address for just that one): an entry of the webhook allow-list.
///
/// Host bits below the prefix are cleared (`10.1.2.3/8` is `10.0.0.0/8`), and an IPv4-mapped
/// IPv6 block (`::ffff:10.0.0.0/104`) is the IPv4 block it maps (`10.0.0.0/8`).
///
/// ```
/// use mcp_fleet_server::events::{Network, Webhooks};
/// let receivers: Network = "10.20.0.0/16".parse()?;
/// assert!(receivers.contains("10.20.3.4".parse()?) && !receivers.contains("10.21.0.1".parse()?));
/// let webhooks = Webhooks::new().allow_network(receivers);
/// # drop(webhooks);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    /// The first address of the block (host bits cleared).
    addr: IpAddr,
    /// How many leading bits are fixed: at most 32 for IPv4, 128 for IPv6.
    prefix: u8,
}

/// Why a [`Network`] could not be parsed.
///
/// ```
/// use mcp_fleet_server::events::{Network, NetworkParseError};
/// assert!(matches!("10.0.0.0/33".parse::<Network>(), Err(NetworkParseError::PrefixTooLong { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkParseError {
    /// The part before the `/` is not an IPv4 or IPv6 address.
    #[error("{0:?} is not an IP address")]
    Address(String),
    /// The part after the `/` is not a number.
    #[error("{0:?} is not a prefix length")]
    Prefix(String),
    /// The prefix length is longer than the address.
    #[error("prefix length {prefix} is too long for {family} (at most {max})")]
    PrefixTooLong {
        /// The prefix length given.
        prefix: u8,
        /// `IPv4` or `IPv6`.
        family: &'static str,
        /// The longest prefix of that family.
        max: u8,
    },
}

impl Network {
    /// The block of `addr`'s first `prefix` bits; `None` if `prefix` is longer than the
    /// address. A mapped IPv6 block of at least 96 bits becomes its IPv4 block.
    fn new(addr: IpAddr, prefix: u8) -> Option<Network> {
        match addr {
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => {
                Network::new(IpAddr::V6(v6).to_canonical(), prefix - 96)
            }
            IpAddr::V4(v4) if prefix <= 32 => {
                Some(Network { addr: IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask32(prefix))), prefix })
            }
            IpAddr::V6(v6) if prefix <= 128 => {
                Some(Network { addr: IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask128(prefix))), prefix })
            }
            _ => None,
        }
    }

    /// Whether `ip` is in this block. A mapped IPv6 address is looked up as its IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => in_v4(ip, net, self.prefix),
            (IpAddr::V6(net), IpAddr::V6(ip)) => in_v6(ip, net, self.prefix),
            _ => false,
        }
    }
}

impl FromStr for Network {
    type Err = NetworkParseError;

    fn from_str(s: &str) -> Result<Network, NetworkParseError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| NetworkParseError::Address(addr.to_owned()))?;
        let (family, max) = match addr {
            IpAddr::V4(_) => ("IPv4", 32),
            IpAddr::V6(_) => ("IPv6", 128),
        };
        let prefix = match prefix {
            None => max,
            Some(text) => text.parse::<u8>().map_err(|_| NetworkParseError::Prefix(text.to_owned()))?,
        };
        Network::new(addr, prefix).ok_or(NetworkParseError::PrefixTooLong { prefix, family, max })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Why an address may not be connected to. Documentation, benchmarking, discard, Teredo,
/// broadcast and other not globally reachable special-purpose ranges are all `Reserved`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `127.0.0.0/8`, `::1`: this host.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), unique local `fc00::/7`, local-use NAT64.
    Private,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// A cloud instance-metadata endpoint (`169.254.169.254`, `fd00:ec2::254`,
    /// `100.100.100.200`): where credentials leak from.
    Metadata,
    /// `0.0.0.0`, `::`: connecting to it reaches this host.
    Unspecified,
    /// Carrier-grade NAT space `100.64.0.0/10` (RFC 6598).
    Shared,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// Any other address the IANA registries do not mark globally reachable.
    Reserved,
}

impl Refusal {
    /// The reason as a metrics label: `loopback`, `private`, `link_local`, `metadata`,
    /// `unspecified`, `shared`, `multicast`, `reserved`.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Refusal::Loopback => "loopback",
            Refusal::Private => "private",
            Refusal::LinkLocal => "link_local",
            Refusal::Metadata => "metadata",
            Refusal::Unspecified => "unspecified",
            Refusal::Shared => "shared",
            Refusal::Multicast => "multicast",
            Refusal::Reserved => "reserved",
        }
    }
}

/// Why a delivery may not connect to `ip`, or `None` if it may: an address in `allowed` is
/// always accepted (the operator's webhook receivers in a private network); otherwise only a
/// globally reachable address is.
pub(crate) fn refusal(ip: IpAddr, allowed: &[Network]) -> Option<Refusal> {
    if allowed.iter().any(|network| network.contains(ip)) {
        return None;
    }
    match ip.to_canonical() {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

/// One range of a special-purpose registry: its first address, its prefix length, and what
/// an address in it is refused as (`None`: globally reachable). The first match wins, so an
/// exception precedes the block around it.
type Range<A> = (A, u8, Option<Refusal>);

/// The IPv4 ranges that are not globally reachable (IANA IPv4 Special-Purpose Address
/// Registry), with metadata endpoints first so they are reported as such.
const V4_RANGES: &[Range<Ipv4Addr>] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 32, Some(Refusal::Unspecified)),
    (Ipv4Addr::new(0, 0, 0, 0), 8, Some(Refusal::Reserved)), // "this network", RFC 791
    (Ipv4Addr::new(10, 0, 0, 0), 8, Some(Refusal::Private)), // RFC 1918
    (Ipv4Addr::new(100, 100, 100, 200), 32, Some(Refusal::Metadata)), // Alibaba Cloud
    (Ipv4Addr::new(100, 64, 0, 0), 10, Some(Refusal::Shared)), // RFC 6598
    (Ipv4Addr::new(127, 0, 0, 0), 8, Some(Refusal::Loopback)), // RFC 1122
    (Ipv4Addr::new(169, 254, 169, 254), 32, Some(Refusal::Metadata)), // AWS, GCP, Azure, ...
    (Ipv4Addr::new(169, 254, 0, 0), 16, Some(Refusal::LinkLocal)), // RFC 3927
    (Ipv4Addr::new(172, 16, 0, 0), 12, Some(Refusal::Private)), // RFC 1918
    (Ipv4Addr::new(192, 0, 0, 9), 32, None),                 // PCP anycast, RFC 7723
    (Ipv4Addr::new(192, 0, 0, 10), 32, None),                // TURN anycast, RFC 8155
    (Ipv4Addr::new(192, 0, 0, 0), 24, Some(Refusal::Reserved)), // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24, Some(Refusal::Reserved)), // TEST-NET-1, RFC 5737
    (Ipv4Addr::new(192, 88, 99, 0), 24, Some(Refusal::Reserved)), // 6to4 relay, RFC 7526
    (Ipv4Addr::new(192, 168, 0, 0), 16, Some(Refusal::Private)), // RFC 1918
    (Ipv4Addr::new(198, 18, 0, 0), 15, Some(Refusal::Reserved)), // benchmarking, RFC 2544
    (Ipv4Addr::new(198, 51, 100, 0), 24, Some(Refusal::Reserved)), // TEST-NET-2
    (Ipv4Addr::new(203, 0, 113, 0), 24, Some(Refusal::Reserved)), // TEST-NET-3
    (Ipv4Addr::new(224, 0, 0, 0), 4, Some(Refusal::Multicast)), // RFC 5771
    (Ipv4Addr::new(240, 0, 0, 0), 4, Some(Refusal::Reserved)), // incl. broadcast, RFC 1112
];

/// The IPv6 ranges checked after NAT64 and 6to4 (IANA IPv6 Special-Purpose Address
/// Registry); the last two entries accept global unicast `2000::/3` and refuse everything
/// else, which IANA has not allocated for global unicast.
const V6_RANGES: &[Range<Ipv6Addr>] = &[
    (Ipv6Addr::UNSPECIFIED, 128, Some(Refusal::Unspecified)),
    (Ipv6Addr::LOCALHOST, 128, Some(Refusal::Loopback)),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96, Some(Refusal::Reserved)), // IPv4-compatible
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, Some(Refusal::Private)), // RFC 8215
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64, Some(Refusal::Reserved)), // discard
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 1), 128, None),              // PCP anycast
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 2), 128, None),              // TURN anycast
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 3), 128, None),              // DNS-SD SRP anycast
    (Ipv6Addr::new(0x2001, 3, 0, 0, 0, 0, 0, 0), 32, None),               // AMT, RFC 7450
    (Ipv6Addr::new(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48, None),           // AS112-v6, RFC 7535
    (Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 27, None),            // ORCHIDv2, DRIPv2
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, Some(Refusal::Reserved)), // Teredo, ...
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, Some(Refusal::Reserved)), // docs
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, Some(Refusal::Reserved)), // RFC 9637
    (Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254), 128, Some(Refusal::Metadata)), // AWS
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, Some(Refusal::Private)), // RFC 4193
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, Some(Refusal::LinkLocal)),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, Some(Refusal::Multicast)),
    (Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3, None), // global unicast
    (Ipv6Addr::UNSPECIFIED, 0, Some(Refusal::Reserved)),
];

/// The well-known NAT64 prefix `64:ff9b::/96` (RFC 6052): the last 32 bits are an IPv4
/// address the translator connects to.
const NAT64: Ipv6Addr = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0);

/// The 6to4 prefix `2002::/16` (RFC 3056): bits 16 to 48 are the IPv4 address of the site.
const SIX_TO_FOUR: Ipv6Addr = Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0);

/// Why an IPv4 address is refused: the first range of [`V4_RANGES`] holding it decides.
fn refusal_v4(ip: Ipv4Addr) -> Option<Refusal> {
    V4_RANGES.iter().find(|(net, prefix, _)| in_v4(ip, *net, *prefix)).and_then(|(_, _, refusal)| *refusal)
}

/// Why an IPv6 address (not IPv4-mapped) is refused. A NAT64 or 6to4 address reaches the
/// IPv4 address inside it, so that address decides; then the first range of [`V6_RANGES`].
fn refusal_v6(ip: Ipv6Addr) -> Option<Refusal> {
    let bits = u128::from(ip);
    if in_v6(ip, NAT64, 96) {
        // The embedded address is the low 32 bits; the truncation is the point.
        return refusal_v4(Ipv4Addr::from(bits as u32));
    }
    if in_v6(ip, SIX_TO_FOUR, 16) {
        // The embedded address is bits 16..48 counted from the top: shift them to the bottom.
        return refusal_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    V6_RANGES.iter().find(|(net, prefix, _)| in_v6(ip, *net, *prefix)).and_then(|(_, _, refusal)| *refusal)
}

/// Whether `ip` shares its first `prefix` bits with `net`.
fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    (u32::from(ip) ^ u32::from(net)) & mask32(prefix) == 0
}

/// Whether `ip` shares its first `prefix` bits with `net`.
fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    (u128::from(ip) ^ u128::from(net)) & mask128(prefix) == 0
}

/// The 32-bit mask of the first `prefix` bits (all bits from 32 on).
fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix.min(32))).unwrap_or(0)
}

/// The 128-bit mask of the first `prefix` bits (all bits from 128 on).
fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix.min(128))).unwrap_or(0)
}

#[cfg(test)]
mod tests;
