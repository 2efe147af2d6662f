//! ACL host patterns: `*`, one address, or (from metadata.version 4.4-IV1) a CIDR range.
//!
//! Kafka compares an ACL's host string with the client's `InetAddress.getHostAddress()`, so an
//! IPv6 client is written in full (`0:0:0:0:0:0:0:1`, never `::1`) and a host name never
//! matches. CIDR ranges are parsed as Apache Commons Net's `SubnetUtils` / `SubnetUtils6` parse
//! them (what Kafka's `CidrUtils` uses).

use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host of an ACL that matches every client.
pub const WILDCARD_HOST: &str = "*";

/// The client address as Java's `InetAddress.getHostAddress()` writes it: dotted decimal for
/// IPv4 (IPv4-mapped IPv6 addresses are IPv4, as the JVM makes them), eight lowercase hex
/// groups without leading zeros and without `::` for IPv6.
pub fn java_host_address(address: IpAddr) -> String {
    match address.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let mut text = String::with_capacity(39);
            for (i, group) in v6.segments().iter().enumerate() {
                if i > 0 {
                    text.push(':');
                }
                let _ = write!(text, "{group:x}");
            }
            text
        }
    }
}

/// An ACL's host, compiled once when the ACL is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostPattern {
    Any,
    /// The ACL names exactly the text Java writes for this address.
    Address(IpAddr),
    Cidr(Cidr),
    /// A host name, a non-canonical address, an invalid CIDR: nothing Java writes equals it.
    Never,
}

impl HostPattern {
    pub(crate) fn compile(host: &str) -> HostPattern {
        if host == WILDCARD_HOST {
            return HostPattern::Any;
        }
        if let Ok(address) = host.parse::<IpAddr>() {
            let address = address.to_canonical();
            if java_host_address(address) == host {
                return HostPattern::Address(address);
            }
        }
        if host.contains('/') {
            if let Ok(cidr) = Cidr::parse(host) {
                return HostPattern::Cidr(cidr);
            }
        }
        HostPattern::Never
    }

    pub(crate) fn matches(&self, client: IpAddr) -> bool {
        match self {
            HostPattern::Any => true,
            HostPattern::Address(address) => *address == client.to_canonical(),
            HostPattern::Cidr(cidr) => cidr.contains(client),
            HostPattern::Never => false,
        }
    }
}

/// A CIDR range, inclusive of its network and broadcast addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix_length: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n` (1-3 digits per octet, as Commons Net's pattern) or, when the text
    /// holds a `:`, an IPv6 address and a prefix length of 0-128. An IPv4-mapped IPv6 address
    /// is refused, as the JVM turns it into an IPv4 address that `SubnetUtils6` does not take.
    /// The error is the parser's message, which Kafka puts after "Invalid CIDR notation".
    pub fn parse(text: &str) -> Result<Cidr, String> {
        if text.contains(':') {
            parse_v6(text)
        } else {
            parse_v4(text)
        }
    }

    /// Whether `client` is in the range. An IPv4 client is never in an IPv6 range, nor the
    /// other way round.
    pub fn contains(&self, client: IpAddr) -> bool {
        match (self.network, client.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(client)) => {
                let mask = prefix_mask_32(self.prefix_length);
                u32::from(client) & mask == u32::from(network) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(client)) => {
                let mask = prefix_mask_128(self.prefix_length);
                u128::from(client) & mask == u128::from(network) & mask
            }
            _ => false,
        }
    }
}

fn could_not_parse(text: &str) -> String {
    format!("Could not parse [{text}]")
}

fn parse_v4(text: &str) -> Result<Cidr, String> {
    let (address, prefix) = text.split_once('/').ok_or_else(|| could_not_parse(text))?;
    let octets: Vec<&str> = address.split('.').collect();
    let well_formed = octets.len() == 4
        && octets
            .iter()
            .chain([&prefix])
            .all(|part| is_1_to_3_digits(part));
    if !well_formed {
        return Err(could_not_parse(text));
    }
    let mut bytes = [0u8; 4];
    for (byte, octet) in bytes.iter_mut().zip(&octets) {
        *byte = in_range(octet, 255)?;
    }
    let prefix_length = in_range(prefix, 32)?;
    Ok(Cidr {
        network: IpAddr::V4(Ipv4Addr::from(bytes)),
        prefix_length,
    })
}

fn is_1_to_3_digits(part: &str) -> bool {
    (1..=3).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit())
}

/// A number already known to be 1-3 ASCII digits, refused above `max` with Commons Net's words.
fn in_range(digits: &str, max: u8) -> Result<u8, String> {
    let value: u16 = digits.parse().map_err(|_| could_not_parse(digits))?;
    u8::try_from(value)
        .ok()
        .filter(|v| *v <= max)
        .ok_or_else(|| format!("Value [{value}] not in range [0,{max}]"))
}

fn parse_v6(text: &str) -> Result<Cidr, String> {
    let (address, prefix) = text
        .split_once('/')
        .ok_or_else(|| format!("{} - missing prefix length", could_not_parse(text)))?;
    let prefix_length: i32 = prefix
        .parse()
        .map_err(|_| format!("{} - invalid prefix length", could_not_parse(text)))?;
    let prefix_length = u8::try_from(prefix_length)
        .ok()
        .filter(|p| *p <= 128)
        .ok_or_else(|| {
            format!(
                "{} - prefix length must be between 0 and 128",
                could_not_parse(text)
            )
        })?;
    let literal = address
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(address);
    let network: Ipv6Addr = literal.parse().map_err(|_| could_not_parse(address))?;
    if network.to_ipv4_mapped().is_some() {
        return Err(format!(
            "{} - not an IPv6 address",
            could_not_parse(address)
        ));
    }
    Ok(Cidr {
        network: IpAddr::V6(network),
        prefix_length,
    })
}

fn prefix_mask_32(prefix_length: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_length))
        .unwrap_or(0)
}

fn prefix_mask_128(prefix_length: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix_length))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ipv6_clients_are_written_in_full_as_java_writes_them() {
        assert_eq!(java_host_address(ip("::1")), "0:0:0:0:0:0:0:1");
        assert_eq!(
            java_host_address(ip("2001:db8::ab:1")),
            "2001:db8:0:0:0:0:ab:1"
        );
        assert_eq!(java_host_address(ip("10.0.0.7")), "10.0.0.7");
        assert_eq!(java_host_address(ip("::ffff:10.0.0.7")), "10.0.0.7");
    }

    #[test]
    fn an_acl_host_matches_only_the_text_java_writes() {
        assert!(HostPattern::compile("0:0:0:0:0:0:0:1").matches(ip("::1")));
        assert!(!HostPattern::compile("::1").matches(ip("::1")));
        assert!(HostPattern::compile("10.0.0.7").matches(ip("10.0.0.7")));
        assert!(HostPattern::compile("10.0.0.7").matches(ip("::ffff:10.0.0.7")));
        assert!(!HostPattern::compile("10.0.0.7").matches(ip("10.0.0.8")));
        assert!(!HostPattern::compile("localhost").matches(ip("127.0.0.1")));
        assert!(HostPattern::compile("*").matches(ip("::1")));
    }

    #[test]
    fn ipv4_cidr_ranges_include_their_network_and_broadcast_addresses() {
        let pattern = HostPattern::compile("192.168.1.0/24");
        assert!(pattern.matches(ip("192.168.1.0")));
        assert!(pattern.matches(ip("192.168.1.255")));
        assert!(!pattern.matches(ip("192.168.2.0")));
        assert!(HostPattern::compile("0.0.0.0/0").matches(ip("8.8.8.8")));
        assert!(HostPattern::compile("10.1.2.3/32").matches(ip("10.1.2.3")));
        assert!(!HostPattern::compile("10.1.2.3/32").matches(ip("10.1.2.4")));
        // The address need not be the network address.
        assert!(HostPattern::compile("10.1.2.3/8").matches(ip("10.200.0.1")));
    }

    #[test]
    fn ipv6_cidr_ranges_match_ipv6_clients_only() {
        let pattern = HostPattern::compile("2001:db8::/32");
        assert!(pattern.matches(ip("2001:db8:ffff::1")));
        assert!(!pattern.matches(ip("2001:db9::1")));
        assert!(!HostPattern::compile("::/0").matches(ip("1.2.3.4")));
        assert!(!HostPattern::compile("0.0.0.0/0").matches(ip("::1")));
        assert!(HostPattern::compile("::192.168.1.0/120").matches(ip("::192.168.1.5")));
        assert!(!HostPattern::compile("::192.168.1.0/120").matches(ip("192.168.1.5")));
    }

    #[test]
    fn invalid_cidr_ranges_are_refused_and_never_match() {
        for bad in [
            "192.168.0.0/33",
            "192.168.0.0/-1",
            "192.168.0.256/24",
            "192.168.0.0/abc",
            "192.168.0.0/",
            "2001:db8::/129",
            "::ffff:192.168.1.0/24",
            "example.com/test",
            "1.2.3/8",
            "1.2.3.4.5/8",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
            assert_eq!(HostPattern::compile(bad), HostPattern::Never, "{bad}");
        }
        for good in [
            "192.168.0.0/24",
            "0.0.0.0/0",
            "192.168.1.1/32",
            "2001:db8:abcd::/48",
            "::1/128",
            "::/0",
        ] {
            assert!(Cidr::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn cidr_errors_carry_the_parsers_words() {
        assert_eq!(
            Cidr::parse("192.168.0.0/33").unwrap_err(),
            "Value [33] not in range [0,32]"
        );
        assert_eq!(
            Cidr::parse("example.com/test").unwrap_err(),
            "Could not parse [example.com/test]"
        );
        assert_eq!(
            Cidr::parse("2001:db8::/129").unwrap_err(),
            "Could not parse [2001:db8::/129] - prefix length must be between 0 and 128"
        );
    }
}
