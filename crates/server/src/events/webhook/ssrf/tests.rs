//! Tests of the address rules: every special-purpose range, both families, the allow-list.

use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().expect("a test address")
}

fn net(text: &str) -> Network {
    text.parse().expect("a test network")
}

/// Asserts the refusal (without an allow-list) of each address.
fn assert_refused(cases: &[(&str, Option<Refusal>)]) {
    for (address, expected) in cases {
        assert_eq!(refusal(ip(address), &[]), *expected, "{address}");
    }
}

#[test]
fn refuses_ipv4_special_purpose_ranges() {
    use Refusal::*;
    assert_refused(&[
        ("0.0.0.0", Some(Unspecified)),
        ("0.1.2.3", Some(Reserved)),
        ("127.0.0.1", Some(Loopback)),
        ("127.255.255.254", Some(Loopback)),
        ("10.0.0.7", Some(Private)),
        ("172.16.0.1", Some(Private)),
        ("172.31.255.255", Some(Private)),
        ("192.168.1.1", Some(Private)),
        ("169.254.169.254", Some(Metadata)),
        ("100.100.100.200", Some(Metadata)),
        ("169.254.0.1", Some(LinkLocal)),
        ("100.64.0.1", Some(Shared)),
        ("100.127.255.255", Some(Shared)),
        ("224.0.0.1", Some(Multicast)),
        ("239.255.255.250", Some(Multicast)),
        ("255.255.255.255", Some(Reserved)),
        ("240.0.0.1", Some(Reserved)),
        ("192.0.2.1", Some(Reserved)),
        ("198.51.100.1", Some(Reserved)),
        ("203.0.113.1", Some(Reserved)),
        ("198.18.0.1", Some(Reserved)),
        ("198.19.255.255", Some(Reserved)),
        ("192.0.0.8", Some(Reserved)),
        ("192.88.99.1", Some(Reserved)),
    ]);
}

#[test]
fn accepts_global_ipv4_next_to_the_ranges() {
    for address in [
        "1.1.1.1",
        "8.8.8.8",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.0.9",
        "192.0.0.10",
        "192.0.3.0",
        "192.167.255.255",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
    ] {
        assert_eq!(refusal(ip(address), &[]), None, "{address}");
    }
}

#[test]
fn refuses_ipv6_special_purpose_ranges() {
    use Refusal::*;
    assert_refused(&[
        ("::", Some(Unspecified)),
        ("::1", Some(Loopback)),
        ("::7f00:1", Some(Reserved)),
        ("fc00::1", Some(Private)),
        ("fd12:3456::1", Some(Private)),
        ("fd00:ec2::254", Some(Metadata)),
        ("fd00:ec2::253", Some(Private)),
        ("fe80::1", Some(LinkLocal)),
        ("febf::1", Some(LinkLocal)),
        ("fec0::1", Some(Reserved)),
        ("ff02::1", Some(Multicast)),
        ("2001:db8::1", Some(Reserved)),
        ("3fff::1", Some(Reserved)),
        ("100::1", Some(Reserved)),
        ("2001::1", Some(Reserved)),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some(Reserved)),
        ("2001:2::1", Some(Reserved)),
        ("64:ff9b:1::1", Some(Private)),
        ("5f00::1", Some(Reserved)),
        ("4000::1", Some(Reserved)),
    ]);
}

#[test]
fn accepts_global_ipv6() {
    for address in ["2606:4700:4700::1111", "2a00:1450::1", "2001:4860::8888", "2001:1::1", "2001:3::1", "2001:20::1"] {
        assert_eq!(refusal(ip(address), &[]), None, "{address}");
    }
}

#[test]
fn judges_embedded_ipv4_addresses() {
    use Refusal::*;
    assert_refused(&[
        ("::ffff:127.0.0.1", Some(Loopback)),
        ("::ffff:169.254.169.254", Some(Metadata)),
        ("::ffff:10.1.2.3", Some(Private)),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::7f00:1", Some(Loopback)),
        ("64:ff9b::a9fe:a9fe", Some(Metadata)),
        ("64:ff9b::c0a8:101", Some(Private)),
        ("64:ff9b::808:808", None),
        ("2002:7f00:1::1", Some(Loopback)),
        ("2002:a00:1::", Some(Private)),
        ("2002:a9fe:a9fe::1", Some(Metadata)),
        ("2002:808:808::1", None),
    ]);
}

#[test]
fn the_allow_list_wins() {
    let allowed = [net("10.0.0.0/8"), net("::1"), net("fd00::/8")];
    assert_eq!(refusal(ip("10.0.0.7"), &allowed), None);
    assert_eq!(refusal(ip("::ffff:10.0.0.7"), &allowed), None);
    assert_eq!(refusal(ip("::1"), &allowed), None);
    assert_eq!(refusal(ip("fd00:ec2::254"), &allowed), None);
    assert_eq!(refusal(ip("11.0.0.1"), &allowed), None);
    assert_eq!(refusal(ip("127.0.0.1"), &allowed), Some(Refusal::Loopback));
    assert_eq!(refusal(ip("192.168.0.1"), &allowed), Some(Refusal::Private));
    assert_eq!(refusal(ip("fc00::1"), &allowed), Some(Refusal::Private));
    // The address connected to is what the list matches, not the IPv4 inside NAT64.
    assert_eq!(refusal(ip("64:ff9b::a00:7"), &allowed), Some(Refusal::Private));
}

#[test]
fn parses_networks() {
    assert_eq!(net("10.0.0.0/8").to_string(), "10.0.0.0/8");
    assert_eq!(net("10.1.2.3/8").to_string(), "10.0.0.0/8");
    assert_eq!(net("192.168.1.1").to_string(), "192.168.1.1/32");
    assert_eq!(net("::1").to_string(), "::1/128");
    assert_eq!(net("fd00::1/8").to_string(), "fd00::/8");
    assert_eq!(net("::ffff:10.0.0.0/104"), net("10.0.0.0/8"));
    assert_eq!(net("::ffff:127.0.0.1"), net("127.0.0.1/32"));
    assert_eq!(net("0.0.0.0/0").to_string(), "0.0.0.0/0");
}

#[test]
fn rejects_malformed_networks() {
    assert_eq!("10.0.0/8".parse::<Network>(), Err(NetworkParseError::Address("10.0.0".into())));
    assert_eq!("10.0.0.0/x".parse::<Network>(), Err(NetworkParseError::Prefix("x".into())));
    assert_eq!("10.0.0.0/".parse::<Network>(), Err(NetworkParseError::Prefix(String::new())));
    let too_long = NetworkParseError::PrefixTooLong { prefix: 33, family: "IPv4", max: 32 };
    assert_eq!("10.0.0.0/33".parse::<Network>(), Err(too_long));
    assert!("::/129".parse::<Network>().is_err());
    assert!("host.example/8".parse::<Network>().is_err());
    let error = "10.0.0.0/33".parse::<Network>().expect_err("too long").to_string();
    assert_eq!(error, "prefix length 33 is too long for IPv4 (at most 32)");
}

#[test]
fn contains_checks_the_prefix_and_the_family() {
    let private = net("172.16.0.0/12");
    assert!(private.contains(ip("172.16.0.0")) && private.contains(ip("172.31.255.255")));
    assert!(!private.contains(ip("172.32.0.0")) && !private.contains(ip("172.15.255.255")));
    assert!(private.contains(ip("::ffff:172.20.0.1")));
    assert!(!private.contains(ip("::ac14:1")));
    let everything_v4 = net("0.0.0.0/0");
    assert!(everything_v4.contains(ip("8.8.8.8")) && !everything_v4.contains(ip("::2")));
    let everything_v6 = net("::/0");
    assert!(everything_v6.contains(ip("2001:db8::1")) && !everything_v6.contains(ip("1.2.3.4")));
    assert!(net("::1").contains(ip("::1")) && !net("::1").contains(ip("::2")));
}

#[test]
fn labels_are_metric_names() {
    assert_eq!(Refusal::LinkLocal.label(), "link_local");
    assert_eq!(Refusal::Metadata.label(), "metadata");
    assert_eq!(Refusal::Unspecified.label(), "unspecified");
}
