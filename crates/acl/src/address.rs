//! Address patterns of the accounts file (`whiteRemoteAddress`, `globalWhiteRemoteAddresses`):
//! an IP, a CIDR block, `*`, or an IPv4 address with `*` or `lo-hi` octets as Java's
//! `plain_acl.yml` writes them (`192.168.0.*`, `10.1.1-5.*`).

use std::net::IpAddr;
use std::str::FromStr;

/// One allowed-address pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrPattern {
    /// `*`: every address.
    Any,
    /// An address and a prefix length (`10.0.0.0/8`, `fd00::/8`; a bare IP is a full-length prefix).
    Cidr(IpAddr, u8),
    /// An IPv4 address with an inclusive range per octet (`192.168.*.1-9`).
    Octets([(u8, u8); 4]),
}

impl AddrPattern {
    /// Whether `ip` matches. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a dual-stack
    /// listener reports for an IPv4 client) match as their IPv4 address.
    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        match *self {
            AddrPattern::Any => true,
            AddrPattern::Cidr(net, len) => match (net, ip) {
                (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(&net.octets(), &ip.octets(), len),
                (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_eq(&net.octets(), &ip.octets(), len),
                _ => false,
            },
            AddrPattern::Octets(ranges) => match ip {
                IpAddr::V4(ip) => {
                    ip.octets().iter().zip(ranges).all(|(o, (lo, hi))| (lo..=hi).contains(o))
                }
                IpAddr::V6(_) => false,
            },
        }
    }
}

/// Whether the first `len` bits of `a` and `b` are equal.
fn prefix_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let (whole, rest) = (usize::from(len / 8), len % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xFFu8 << (8 - rest);
    (a[whole] & mask) == (b[whole] & mask)
}

impl FromStr for AddrPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "*" {
            return Ok(AddrPattern::Any);
        }
        if let Some((addr, len)) = text.split_once('/') {
            let ip: IpAddr = addr.parse().map_err(|_| format!("{text:?}: not an IP address"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let len: u8 = len
                .parse()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {max}"))?;
            return Ok(AddrPattern::Cidr(ip.to_canonical(), len));
        }
        if let Ok(ip) = text.parse::<IpAddr>() {
            let ip = ip.to_canonical();
            return Ok(AddrPattern::Cidr(ip, if ip.is_ipv4() { 32 } else { 128 }));
        }
        octets(text).ok_or_else(|| {
            format!(
                "{text:?}: expected an IP address, a CIDR block (10.0.0.0/8), * or IPv4 octets with * or lo-hi (192.168.0.*)"
            )
        })
    }
}

/// A comma-separated list of [`AddrPattern`]s (`proxyProtocolTrustedAddresses`): empty matches
/// nothing, `*` everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrList(Vec<AddrPattern>);

impl AddrList {
    /// Whether some pattern of the list matches `ip`.
    pub fn matches(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|p| p.matches(ip))
    }

    /// Whether the list matches nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromStr for AddrList {
    type Err = String;

    /// Parses `a, b, c` (blank entries skipped); the error quotes the bad entry.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts = text.split(',').map(str::trim).filter(|p| !p.is_empty());
        parts.map(str::parse).collect::<Result<_, _>>().map(AddrList)
    }
}

/// `a.b.c.d` where each part is a number, `*` or `lo-hi`.
fn octets(text: &str) -> Option<AddrPattern> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut ranges = [(0u8, 0u8); 4];
    for (slot, part) in ranges.iter_mut().zip(parts) {
        *slot = match part.split_once('-') {
            _ if part == "*" => (0, 255),
            Some((lo, hi)) => {
                let (lo, hi) = (lo.parse().ok()?, hi.parse().ok()?);
                (lo <= hi).then_some((lo, hi))?
            }
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
    }
    Some(AddrPattern::Octets(ranges))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn pattern(s: &str) -> AddrPattern {
        s.parse().expect(s)
    }

    #[test]
    fn ips_and_cidr_blocks_match_their_addresses_only() {
        assert!(pattern("127.0.0.1").matches(ip("127.0.0.1")));
        assert!(!pattern("127.0.0.1").matches(ip("127.0.0.2")));
        assert!(pattern("10.0.0.0/8").matches(ip("10.255.1.2")));
        assert!(!pattern("10.0.0.0/8").matches(ip("11.0.0.1")));
        assert!(pattern("192.168.4.0/22").matches(ip("192.168.7.255")));
        assert!(!pattern("192.168.4.0/22").matches(ip("192.168.8.0")));
        assert!(pattern("fd00::/8").matches(ip("fd12::1")));
        assert!(!pattern("fd00::/8").matches(ip("fe80::1")));
        assert!(pattern("0.0.0.0/0").matches(ip("8.8.8.8")));
        assert!(!pattern("0.0.0.0/0").matches(ip("::2")), "an IPv4 block never matches IPv6");
        assert!(pattern("*").matches(ip("::1")));
    }

    #[test]
    fn ipv4_mapped_ipv6_peers_match_ipv4_patterns() {
        assert!(pattern("127.0.0.1").matches(ip("::ffff:127.0.0.1")));
        assert!(pattern("10.0.0.0/8").matches(ip("::ffff:10.1.2.3")));
        assert!(pattern("::ffff:10.1.2.3").matches(ip("10.1.2.3")));
    }

    #[test]
    fn java_style_octet_patterns_match_their_ranges() {
        let p = pattern("192.168.0.*");
        assert!(p.matches(ip("192.168.0.77")));
        assert!(!p.matches(ip("192.168.1.77")));
        let p = pattern("10.1.1-5.*");
        assert!(p.matches(ip("10.1.5.0")) && !p.matches(ip("10.1.6.0")));
    }

    #[test]
    fn lists_match_any_of_their_entries_and_empty_ones_nothing() {
        let list: AddrList = " 127.0.0.1, 10.9.0.0/16 ,".parse().expect("list");
        assert!(list.matches(ip("127.0.0.1")) && list.matches(ip("::ffff:10.9.3.4")));
        assert!(!list.matches(ip("10.8.0.1")));
        let empty: AddrList = "".parse().expect("empty");
        assert!(empty.is_empty() && !empty.matches(ip("127.0.0.1")));
        assert!("*".parse::<AddrList>().expect("any").matches(ip("::1")));
        assert!("127.0.0.1,bad".parse::<AddrList>().expect_err("bad").contains("bad"));
    }

    #[test]
    fn malformed_patterns_are_errors_that_quote_them() {
        for bad in ["10.0.0.0/33", "fd00::/129", "nonsense", "10.1.5-1.*", "1.2.3", "10.0.0.256"] {
            let err = bad.parse::<AddrPattern>().expect_err(bad);
            assert!(err.contains(bad), "{err}");
        }
    }
}
