//! HAProxy PROXY protocol v1/v2 preface detection and decoding (pure: bytes in, header out).
//!
//! Java 5.1.4+ always accepts an optional PROXY header before anything else on a connection
//! (remoting-protocol §10.2). Unlike Java (which waits for 12 bytes), [`decode`] decides as soon as
//! the buffered bytes can no longer be the start of a PROXY header, so a 10-byte `{}` frame works.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The 12-byte PROXY protocol v2 signature.
pub const V2_SIGNATURE: [u8; 12] =
    [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];

/// The text every v1 header starts with (Netty matches these 5 bytes, without the space).
const V1_PREFIX: &[u8] = b"PROXY";

/// Longest v1 line Netty accepts, CRLF included.
pub const V1_MAX_LEN: usize = 108;

/// Longest v2 header: 16 fixed bytes plus a u16 length.
pub const V2_MAX_LEN: usize = 16 + 65535;

/// A decoded PROXY header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyHeader {
    /// Protocol version, 1 or 2.
    pub version: u8,
    /// The original client address; `None` for v1 `UNKNOWN`, v2 `LOCAL`, `AF_UNSPEC` and `AF_UNIX`.
    pub source: Option<SocketAddr>,
    /// The address the client connected to (the proxy's frontend); `None` when `source` is.
    pub destination: Option<SocketAddr>,
}

/// What [`decode`] found at the start of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The bytes so far are a strict prefix of a PROXY header start or an incomplete header: read more.
    Incomplete,
    /// The connection does not start with a PROXY header; every byte belongs to the next layer.
    NotProxy,
    /// A complete header that occupies the first `len` bytes.
    Header {
        /// The decoded header.
        header: ProxyHeader,
        /// Bytes consumed by the header.
        len: usize,
    },
}

/// A malformed PROXY header; the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// The v1 line has no CRLF within [`V1_MAX_LEN`] bytes.
    #[error("PROXY v1 header longer than {V1_MAX_LEN} bytes")]
    V1TooLong,
    /// The v1 line does not follow `PROXY <proto> <src> <dst> <sport> <dport>`.
    #[error("malformed PROXY v1 header: {0}")]
    V1Malformed(&'static str),
    /// The v2 version nibble is not 2.
    #[error("unsupported PROXY v2 version nibble {0:#x}")]
    V2Version(u8),
    /// The v2 command nibble is neither LOCAL (0) nor PROXY (1).
    #[error("unsupported PROXY v2 command {0:#x}")]
    V2Command(u8),
    /// The v2 address family nibble is not UNSPEC/INET/INET6/UNIX.
    #[error("unsupported PROXY v2 address family {0:#x}")]
    V2Family(u8),
    /// The v2 transport protocol nibble is not UNSPEC/STREAM/DGRAM.
    #[error("unsupported PROXY v2 transport protocol {0:#x}")]
    V2Transport(u8),
    /// The v2 length is too small for the declared address family.
    #[error("PROXY v2 address block of {len} bytes is shorter than the {need} the family needs")]
    V2ShortAddress {
        /// Declared length after the 16 fixed bytes.
        len: usize,
        /// Bytes the address family requires.
        need: usize,
    },
}

/// Looks at the first bytes of a connection and decodes a PROXY header if there is one.
///
/// Returns [`Decoded::Incomplete`] only while `buf` could still become a PROXY header.
/// Java: `HAProxyMessageDecoder#detectProtocol`, `#decode` (Netty, used by `NettyRemotingServer.HandshakeHandler`).
pub fn decode(buf: &[u8]) -> Result<Decoded, ProxyError> {
    if starts_or_prefix(buf, V1_PREFIX) {
        if buf.len() < V1_PREFIX.len() {
            return Ok(Decoded::Incomplete);
        }
        return decode_v1(buf);
    }
    if starts_or_prefix(buf, &V2_SIGNATURE) {
        if buf.len() < V2_SIGNATURE.len() {
            return Ok(Decoded::Incomplete);
        }
        return decode_v2(buf);
    }
    Ok(Decoded::NotProxy)
}

/// True if `buf` starts with `pattern` or is a (possibly empty) prefix of it.
fn starts_or_prefix(buf: &[u8], pattern: &[u8]) -> bool {
    let n = buf.len().min(pattern.len());
    buf[..n] == pattern[..n]
}

/// Decodes a v1 text header; `buf` starts with `PROXY`.
fn decode_v1(buf: &[u8]) -> Result<Decoded, ProxyError> {
    let window = &buf[..buf.len().min(V1_MAX_LEN)];
    let Some(cr) = window.windows(2).position(|w| w == b"\r\n") else {
        if buf.len() >= V1_MAX_LEN {
            return Err(ProxyError::V1TooLong);
        }
        return Ok(Decoded::Incomplete);
    };
    let len = cr + 2;
    let line = std::str::from_utf8(&buf[..cr]).map_err(|_| ProxyError::V1Malformed("not ASCII"))?;
    let mut parts = line.split(' ');
    if parts.next() != Some("PROXY") {
        return Err(ProxyError::V1Malformed("missing `PROXY ` prefix"));
    }
    let proto = parts.next().ok_or(ProxyError::V1Malformed("missing protocol"))?;
    let v4 = match proto {
        // UNKNOWN: the rest of the line is ignored (haproxy spec 2.1).
        "UNKNOWN" => {
            return Ok(Decoded::Header {
                header: ProxyHeader { version: 1, source: None, destination: None },
                len,
            })
        }
        "TCP4" => true,
        "TCP6" => false,
        _ => return Err(ProxyError::V1Malformed("protocol is not TCP4, TCP6 or UNKNOWN")),
    };
    let fields: Vec<&str> = parts.collect();
    let [src, dst, sport, dport] = fields[..] else {
        return Err(ProxyError::V1Malformed("expected 4 fields after the protocol"));
    };
    let src = parse_ip(src, v4)?;
    let dst = parse_ip(dst, v4)?;
    let sport = parse_port(sport)?;
    let dport = parse_port(dport)?;
    Ok(Decoded::Header {
        header: ProxyHeader {
            version: 1,
            source: Some(SocketAddr::new(src, sport)),
            destination: Some(SocketAddr::new(dst, dport)),
        },
        len,
    })
}

fn parse_ip(text: &str, v4: bool) -> Result<IpAddr, ProxyError> {
    if v4 {
        text.parse::<Ipv4Addr>()
            .map(IpAddr::V4)
            .map_err(|_| ProxyError::V1Malformed("invalid IPv4 address"))
    } else {
        text.parse::<Ipv6Addr>()
            .map(IpAddr::V6)
            .map_err(|_| ProxyError::V1Malformed("invalid IPv6 address"))
    }
}

fn parse_port(text: &str) -> Result<u16, ProxyError> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ProxyError::V1Malformed("invalid port"));
    }
    text.parse().map_err(|_| ProxyError::V1Malformed("invalid port"))
}

/// Decodes a v2 binary header; `buf` starts with the 12-byte signature.
fn decode_v2(buf: &[u8]) -> Result<Decoded, ProxyError> {
    if buf.len() < 16 {
        return Ok(Decoded::Incomplete);
    }
    let ver_cmd = buf[12];
    if ver_cmd >> 4 != 2 {
        return Err(ProxyError::V2Version(ver_cmd >> 4));
    }
    let local = match ver_cmd & 0x0F {
        0 => true,
        1 => false,
        other => return Err(ProxyError::V2Command(other)),
    };
    let family = buf[13] >> 4;
    let transport = buf[13] & 0x0F;
    if transport > 2 {
        return Err(ProxyError::V2Transport(transport));
    }
    let need = match family {
        0 => 0,
        1 => 12,
        2 => 36,
        3 => 216,
        other => return Err(ProxyError::V2Family(other)),
    };
    let block_len = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    let len = 16 + block_len;
    if buf.len() < len {
        return Ok(Decoded::Incomplete);
    }
    let none = ProxyHeader { version: 2, source: None, destination: None };
    // LOCAL: health checks from the proxy itself; the address block (if any) is skipped.
    if local {
        return Ok(Decoded::Header { header: none, len });
    }
    if block_len < need {
        return Err(ProxyError::V2ShortAddress { len: block_len, need });
    }
    let block = &buf[16..len];
    let header = match family {
        1 => {
            let src = Ipv4Addr::new(block[0], block[1], block[2], block[3]);
            let dst = Ipv4Addr::new(block[4], block[5], block[6], block[7]);
            let sport = u16::from_be_bytes([block[8], block[9]]);
            let dport = u16::from_be_bytes([block[10], block[11]]);
            ProxyHeader {
                version: 2,
                source: Some(SocketAddr::new(src.into(), sport)),
                destination: Some(SocketAddr::new(dst.into(), dport)),
            }
        }
        2 => {
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            src.copy_from_slice(&block[..16]);
            dst.copy_from_slice(&block[16..32]);
            let sport = u16::from_be_bytes([block[32], block[33]]);
            let dport = u16::from_be_bytes([block[34], block[35]]);
            ProxyHeader {
                version: 2,
                source: Some(SocketAddr::new(Ipv6Addr::from(src).into(), sport)),
                destination: Some(SocketAddr::new(Ipv6Addr::from(dst).into(), dport)),
            }
        }
        // AF_UNSPEC and AF_UNIX carry no socket address; TLVs after the block are skipped.
        _ => none,
    };
    Ok(Decoded::Header { header, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(buf: &[u8]) -> (ProxyHeader, usize) {
        match decode(buf) {
            Ok(Decoded::Header { header, len }) => (header, len),
            other => panic!("expected a header, got {other:?}"),
        }
    }

    fn v2(ver_cmd: u8, fam: u8, block: &[u8]) -> Vec<u8> {
        let mut out = V2_SIGNATURE.to_vec();
        out.push(ver_cmd);
        out.push(fam);
        out.extend_from_slice(&u16::try_from(block.len()).unwrap().to_be_bytes());
        out.extend_from_slice(block);
        out
    }

    /// TV-30: the v1 preface is consumed and the frame after it is left untouched.
    #[test]
    fn tv30_v1_tcp4_preface_is_consumed_and_reports_source() {
        let preface = b"PROXY TCP4 192.168.0.1 192.168.0.11 56324 9876\r\n";
        let mut buf = preface.to_vec();
        buf.extend_from_slice(&[0x00, 0x00, 0x00, 0x83, 0x00, 0x00]);
        let (h, len) = header(&buf);
        assert_eq!(len, preface.len());
        assert_eq!(h.version, 1);
        assert_eq!(h.source, Some("192.168.0.1:56324".parse().unwrap()));
        assert_eq!(h.destination, Some("192.168.0.11:9876".parse().unwrap()));
        assert_eq!(&buf[len..], &[0x00, 0x00, 0x00, 0x83, 0x00, 0x00]);
    }

    #[test]
    fn v1_tcp6_reports_ipv6_source() {
        let (h, _) = header(b"PROXY TCP6 2001:db8::1 ::1 4000 9876\r\n");
        assert_eq!(h.source, Some("[2001:db8::1]:4000".parse().unwrap()));
        assert_eq!(h.destination, Some("[::1]:9876".parse().unwrap()));
    }

    #[test]
    fn v1_unknown_carries_no_address() {
        let (h, len) = header(b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\nrest");
        assert_eq!(h.source, None);
        assert_eq!(len, 35);
        let (h, len) = header(b"PROXY UNKNOWN\r\n");
        assert_eq!((h.source, len), (None, 15));
    }

    #[test]
    fn prefixes_of_a_preface_ask_for_more_bytes() {
        for n in 0..5 {
            assert_eq!(decode(&b"PROXY"[..n]), Ok(Decoded::Incomplete), "{n}");
        }
        for n in 1..16 {
            assert_eq!(decode(&v2(0x21, 0x11, &[0; 12])[..n]), Ok(Decoded::Incomplete), "{n}");
        }
        assert_eq!(decode(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"), Ok(Decoded::Incomplete));
        let full = v2(0x21, 0x11, &[0; 12]);
        assert_eq!(decode(&full[..full.len() - 1]), Ok(Decoded::Incomplete));
    }

    #[test]
    fn short_non_proxy_bytes_are_decided_at_once() {
        // A 10-byte `{}` frame: length 6, header length 2.
        let frame = [0, 0, 0, 6, 0, 0, 0, 2, b'{', b'}'];
        assert_eq!(decode(&frame), Ok(Decoded::NotProxy));
        assert_eq!(decode(&[0x16]), Ok(Decoded::NotProxy));
        assert_eq!(decode(b"PX"), Ok(Decoded::NotProxy));
        assert_eq!(decode(&[0x0D, 0x0A, 0x0D, 0x0B]), Ok(Decoded::NotProxy));
    }

    #[test]
    fn malformed_v1_lines_are_errors() {
        for bad in [
            &b"PROXY garbage\r\n"[..],
            b"PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
            b"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 ::1 ::1 1 2\r\n",
            b"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n",
            b"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n",
        ] {
            assert!(
                matches!(decode(bad), Err(ProxyError::V1Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn v1_line_without_crlf_in_108_bytes_is_too_long() {
        let mut line = b"PROXY UNKNOWN ".to_vec();
        line.resize(V1_MAX_LEN, b'x');
        assert_eq!(decode(&line), Err(ProxyError::V1TooLong));
        line.truncate(V1_MAX_LEN - 1);
        assert_eq!(decode(&line), Ok(Decoded::Incomplete));
        line.truncate(V1_MAX_LEN - 2);
        line.extend_from_slice(b"\r\n");
        assert!(matches!(decode(&line), Ok(Decoded::Header { len: V1_MAX_LEN, .. })));
    }

    #[test]
    fn v2_ipv4_proxy_reports_source_and_skips_tlvs() {
        let mut block = vec![10, 0, 0, 1, 10, 0, 0, 2, 0x1F, 0x90, 0x26, 0x94];
        block.extend_from_slice(&[0x01, 0x00, 0x02, b'h', b'2']); // ALPN TLV
        let mut buf = v2(0x21, 0x11, &block);
        let total = buf.len();
        buf.extend_from_slice(&[0, 0, 0, 6]);
        let (h, len) = header(&buf);
        assert_eq!(len, total);
        assert_eq!(h.version, 2);
        assert_eq!(h.source, Some("10.0.0.1:8080".parse().unwrap()));
        assert_eq!(h.destination, Some("10.0.0.2:9876".parse().unwrap()));
    }

    #[test]
    fn v2_ipv6_proxy_reports_source() {
        let mut block = vec![0u8; 36];
        block[15] = 1; // ::1
        block[16] = 0xfe;
        block[17] = 0x80; // fe80::
        block[32..34].copy_from_slice(&4000u16.to_be_bytes());
        block[34..36].copy_from_slice(&9876u16.to_be_bytes());
        let (h, len) = header(&v2(0x21, 0x21, &block));
        assert_eq!(len, 52);
        assert_eq!(h.source, Some("[::1]:4000".parse().unwrap()));
        assert_eq!(h.destination, Some("[fe80::]:9876".parse().unwrap()));
    }

    #[test]
    fn v2_local_unix_and_unspec_carry_no_address() {
        let (h, len) = header(&v2(0x20, 0x00, &[]));
        assert_eq!((h.source, len), (None, 16));
        let (h, _) = header(&v2(0x20, 0x11, &[1; 12]));
        assert_eq!(h.source, None);
        let (h, len) = header(&v2(0x21, 0x31, &[0; 216]));
        assert_eq!((h.source, len), (None, 232));
        let (h, _) = header(&v2(0x21, 0x00, &[]));
        assert_eq!(h.source, None);
    }

    #[test]
    fn malformed_v2_headers_are_errors() {
        assert_eq!(decode(&v2(0x11, 0x11, &[0; 12])), Err(ProxyError::V2Version(1)));
        assert_eq!(decode(&v2(0x22, 0x11, &[0; 12])), Err(ProxyError::V2Command(2)));
        assert_eq!(decode(&v2(0x21, 0x41, &[0; 12])), Err(ProxyError::V2Family(4)));
        assert_eq!(decode(&v2(0x21, 0x13, &[0; 12])), Err(ProxyError::V2Transport(3)));
        assert_eq!(
            decode(&v2(0x21, 0x11, &[0; 11])),
            Err(ProxyError::V2ShortAddress { len: 11, need: 12 })
        );
    }

    #[test]
    fn v2_accepts_the_largest_length() {
        let block = vec![0u8; 65535];
        let (h, len) = header(&v2(0x21, 0x11, &block));
        assert_eq!(len, V2_MAX_LEN);
        assert_eq!(h.source, Some("0.0.0.0:0".parse().unwrap()));
    }
}
