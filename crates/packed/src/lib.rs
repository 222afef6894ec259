//! Packed records (the route snapshot's v2 payload): LEB128 varints (zigzag for signed
//! values), length-prefixed bytes; [`Sink`] writes them through a bounded buffer with the CRC32
//! computed on the way, [`Reader`] reads them back from a slice and checks every length and
//! count against the bytes left (a count is never trusted to size an allocation).

use std::fmt;
use std::io::{self, Write};

/// Bytes that do not read as what was asked: where, and what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed {
    pub at: usize,
    pub what: &'static str,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for Malformed {}

/// How much [`Sink`] buffers before writing through.
const CHUNK: usize = 64 * 1024;

/// A buffered writer that counts and checksums what passes through it.
pub struct Sink<W: Write> {
    inner: W,
    buf: Vec<u8>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Sink<W> {
    pub fn new(inner: W) -> Self {
        Self { inner, buf: Vec::with_capacity(CHUNK + 1024), crc: crc32fast::Hasher::new(), len: 0 }
    }

    fn spill_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> io::Result<()> {
        self.crc.update(&self.buf);
        self.len += self.buf.len() as u64;
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    pub fn varint(&mut self, mut v: u64) -> io::Result<()> {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
        self.spill_if_full()
    }

    pub fn signed(&mut self, v: i64) -> io::Result<()> {
        self.varint(((v << 1) ^ (v >> 63)) as u64)
    }

    pub fn count(&mut self, n: usize) -> io::Result<()> {
        self.varint(n as u64)
    }

    pub fn byte(&mut self, b: u8) -> io::Result<()> {
        self.buf.push(b);
        self.spill_if_full()
    }

    /// Raw bytes, no length.
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() >= CHUNK {
            self.spill()?;
            self.crc.update(bytes);
            self.len += bytes.len() as u64;
            return self.inner.write_all(bytes);
        }
        self.buf.extend_from_slice(bytes);
        self.spill_if_full()
    }

    /// Length-prefixed bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.count(bytes.len())?;
        self.raw(bytes)
    }

    /// Writes what is buffered; the inner writer, the bytes written and their CRC32.
    pub fn finish(mut self) -> io::Result<(W, u64, u32)> {
        self.spill()?;
        Ok((self.inner, self.len, self.crc.finalize()))
    }
}

/// Reads packed records.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

pub type Result<T> = std::result::Result<T, Malformed>;

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// An error at the current position.
    pub fn malformed(&self, what: &'static str) -> Malformed {
        Malformed { at: self.pos, what }
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.malformed("a number runs past the end"));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(self.malformed("a number over 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.malformed("a number over 64 bits"))
    }

    pub fn signed(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub fn i32(&mut self) -> Result<i32> {
        let v = self.signed()?;
        i32::try_from(v).map_err(|_| self.malformed("a 32-bit number out of range"))
    }

    /// A number that indexes something or counts bytes (at most `usize`).
    pub fn index(&mut self) -> Result<usize> {
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| self.malformed("an index out of range"))
    }

    /// A count of records each at least `min_record` bytes long: refused when the bytes left
    /// cannot hold that many, so no allocation sized by it exceeds the file's own size.
    pub fn count(&mut self, min_record: usize) -> Result<usize> {
        let n = self.index()?;
        if n > self.remaining() / min_record.max(1) {
            return Err(self.malformed("a count larger than the bytes left"));
        }
        Ok(n)
    }

    pub fn byte(&mut self) -> Result<u8> {
        let b =
            *self.bytes.get(self.pos).ok_or_else(|| self.malformed("the payload ends early"))?;
        self.pos += 1;
        Ok(b)
    }

    pub fn raw(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.remaining() {
            return Err(self.malformed("a length larger than the bytes left"));
        }
        let bytes = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    /// Length-prefixed bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.index()?;
        self.raw(len)
    }

    /// Length-prefixed UTF-8.
    pub fn str(&mut self) -> Result<&'a str> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| self.malformed("a name that is not UTF-8"))
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_overlong_ones_are_refused() {
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let signed = [0, -1, 1, i64::MIN, i64::MAX, -300];
        let mut sink = Sink::new(Vec::new());
        for v in values {
            sink.varint(v).expect("write");
        }
        for v in signed {
            sink.signed(v).expect("write");
        }
        let (bytes, len, crc) = sink.finish().expect("finish");
        assert_eq!((len, crc), (bytes.len() as u64, crc32fast::hash(&bytes)));
        let mut reader = Reader::new(&bytes);
        for v in values {
            assert_eq!(reader.varint().expect("read"), v);
        }
        for v in signed {
            assert_eq!(reader.signed().expect("read"), v);
        }
        assert!(reader.at_end());
        let overlong = [0xff; 11];
        assert!(Reader::new(&overlong).varint().is_err());
        assert!(Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
            .varint()
            .is_err());
        assert!(Reader::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn counts_and_lengths_are_bounded_by_the_bytes_left() {
        // "a million records" in a 4-byte payload.
        let mut sink = Sink::new(Vec::new());
        sink.varint(1_000_000).expect("write");
        let (bytes, _, _) = sink.finish().expect("finish");
        assert!(Reader::new(&bytes).count(1).is_err());
        assert!(Reader::new(&bytes).bytes().is_err());
        assert_eq!(Reader::new(&[3, 0, 0, 0]).count(1).expect("fits"), 3);
        assert!(Reader::new(&[3, 0, 0, 0]).count(2).is_err());
        assert!(Reader::new(&[2, 0xff, 0xfe]).str().is_err(), "not UTF-8");
    }

    #[test]
    fn large_writes_pass_through_and_are_counted() {
        let big = vec![7u8; 3 * CHUNK];
        let mut sink = Sink::new(Vec::new());
        sink.byte(1).expect("write");
        sink.bytes(&big).expect("write");
        let (bytes, len, crc) = sink.finish().expect("finish");
        assert_eq!((len, crc), (bytes.len() as u64, crc32fast::hash(&bytes)));
        let mut reader = Reader::new(&bytes);
        assert_eq!(reader.byte().expect("byte"), 1);
        assert_eq!(reader.bytes().expect("bytes"), &big[..]);
    }
}
