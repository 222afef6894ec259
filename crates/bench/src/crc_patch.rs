//! `CrcPatch`: the CRC-32 (IEEE, as `crc32fast` and Java's `java.util.zip.CRC32` compute it)
//! of a body kept up to date while a few of its bytes are written over in place, without a pass
//! over the body. The generator's S7 1 % churn patches ~100 topics of a 2 MB body per
//! registration; its CRC pass was the load generator's largest cost of that churn on the
//! machine it shares with the server it measures (#25).
//!
//! The arithmetic: for two messages of one length, `crc(a) ^ crc(b)` is the CRC without
//! initial value or final XOR (`crc0`) of `a ^ b`, and `crc0` of a span followed by `n` zero
//! bytes is `crc0(span)` times `x^(8n)` modulo the CRC's polynomial. A patch of a short span
//! therefore costs a CRC of that span and a few multiplications, whatever the body's length.
//! `crc32fast` combines CRCs but has no cheap shift by `n` zero bytes, hence this module.

use std::sync::OnceLock;

/// The CRC-32 polynomial in reflected bit order (bit 31 is the coefficient of `x^0`).
const POLY: u32 = 0xEDB8_8320;

/// `x^0`, the product's identity, in reflected order.
const ONE: u32 = 1 << 31;

/// `b * x mod P`.
fn times_x(b: u32) -> u32 {
    if b & 1 == 0 {
        b >> 1
    } else {
        (b >> 1) ^ POLY
    }
}

/// `a * b mod P`: `b * x^i` summed over the terms `x^i` of `a`.
fn product(a: u32, mut b: u32) -> u32 {
    let mut sum = 0;
    for i in 0..32 {
        if a & (ONE >> i) != 0 {
            sum ^= b;
        }
        b = times_x(b);
    }
    sum
}

/// `x^(8 * d * 256^t)` for each digit `d` of each base-256 place `t` of a byte count.
struct Powers([[u32; 256]; 4]);

fn powers() -> &'static Powers {
    static POWERS: OnceLock<Powers> = OnceLock::new();
    POWERS.get_or_init(|| {
        let mut table = [[ONE; 256]; 4];
        // x^(8 * 256^t): x^8, then each place's step is the last one to the 256th power.
        let mut step = (0..8).fold(ONE, |p, _| times_x(p));
        for place in &mut table {
            for d in 1..256 {
                place[d] = product(place[d - 1], step);
            }
            step = product(place[255], step);
        }
        Powers(table)
    })
}

/// `x^(8n) mod P`: the factor that `n` zero bytes after a span give its `crc0`.
pub fn zeros(n: usize) -> u32 {
    let table = &powers().0;
    let mut factor = ONE;
    for (t, place) in table.iter().enumerate() {
        let digit = (n >> (8 * t)) & 0xFF;
        if digit != 0 {
            factor = product(factor, place[digit]);
        }
    }
    debug_assert!(n >> 32 == 0, "a body of 4 GiB or more");
    factor
}

/// The CRC of a body, kept up to date across patches of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcPatch {
    crc: u32,
}

impl CrcPatch {
    /// The body's CRC as `crc32fast::hash` gives it.
    pub fn new(crc: u32) -> Self {
        Self { crc }
    }

    /// The bytes `old` are now `new` (of the same length); `factor` is [`zeros`] of the bytes
    /// after them to the body's end.
    pub fn write(&mut self, old: &[u8], new: &[u8], factor: u32) {
        debug_assert_eq!(old.len(), new.len());
        let mut register = 0u32;
        for (o, n) in old.iter().zip(new) {
            register ^= u32::from(o ^ n);
            for _ in 0..8 {
                register = times_x(register);
            }
        }
        if register != 0 {
            self.crc ^= product(register, factor);
        }
    }

    /// The body's CRC now.
    pub fn crc(&self) -> u32 {
        self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patched_crc_is_the_crc_of_the_patched_body() {
        let mut rng = fastrand::Rng::with_seed(25);
        for len in [1usize, 2, 17, 255, 256, 257, 65_536, 300_001] {
            let mut body: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let mut patch = CrcPatch::new(crc32fast::hash(&body));
            for _ in 0..20 {
                let span = rng.usize(1..=len.min(40));
                let at = rng.usize(..=len - span);
                let new: Vec<u8> = (0..span).map(|_| rng.u8(..)).collect();
                let after = len - at - span;
                patch.write(&body[at..at + span], &new, zeros(after));
                body[at..at + span].copy_from_slice(&new);
                assert_eq!(patch.crc(), crc32fast::hash(&body), "len {len}, span {span} at {at}");
            }
        }
    }

    #[test]
    fn the_factor_of_n_zero_bytes_is_n_steps_of_one() {
        let mut step = ONE;
        for n in 0..600 {
            assert_eq!(zeros(n), step, "{n} zero bytes");
            step = (0..8).fold(step, |p, _| times_x(p));
        }
        let big = 5_000_000;
        assert_eq!(zeros(big), product(zeros(big - 1_000), zeros(1_000)));
    }

    #[test]
    fn an_unchanged_span_leaves_the_crc_alone() {
        let body = b"{\"topicConfigTable\":{}}".to_vec();
        let mut patch = CrcPatch::new(crc32fast::hash(&body));
        patch.write(&body[2..8], &body[2..8], zeros(body.len() - 8));
        assert_eq!(patch.crc(), crc32fast::hash(&body));
    }
}
