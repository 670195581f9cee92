//! The 14 bytes pfcgen puts at the start of every UDP payload, so the receive side can
//! count loss, reordering, duplicates and latency per stream:
//!
//! ```text
//! magic 0x9fc6 (2) | stream id (2) | sequence number, low 32 bits (4) | TX TSC, low 48 bits (6)
//! ```
//! all big-endian. 14 bytes is what a 64-byte tagged IPv4/UDP frame has room for
//! (60 − 14 − 4 − 20 − 8). The receiver extends the 32-bit sequence number against the
//! highest it has seen (exact while reordering stays under 2^31 frames) and takes latency
//! as `now − tx` modulo 2^48 ticks (about 30 hours at 2.6 GHz): sender and receiver must
//! share the TSC, i.e. run on the same host (any processes).

/// Bytes of the payload header.
pub const LEN: usize = 14;
/// Marks a pfcgen payload (anything else is counted as not ours).
pub const MAGIC: u16 = 0x9fc6;
const TSC_MASK: u64 = (1 << 48) - 1;

/// A decoded payload header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    pub stream: u16,
    pub seq32: u32,
    pub tsc48: u64,
}

/// Writes the header for (`stream`, `seq`, `tsc`) into the first [`LEN`] bytes of `out`
/// (nothing if `out` is shorter).
#[inline]
pub fn write(out: &mut [u8], stream: u16, seq: u64, tsc: u64) {
    let Some(b) = out.get_mut(..LEN) else { return };
    b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
    b[2..4].copy_from_slice(&stream.to_be_bytes());
    b[4..8].copy_from_slice(&(seq as u32).to_be_bytes());
    b[8..14].copy_from_slice(&(tsc & TSC_MASK).to_be_bytes()[2..]);
}

/// Reads a header; None if `b` is short or the magic is not ours.
#[inline]
pub fn read(b: &[u8]) -> Option<Payload> {
    let b = b.get(..LEN)?;
    if u16::from_be_bytes([b[0], b[1]]) != MAGIC {
        return None;
    }
    let mut t = [0u8; 8];
    t[2..].copy_from_slice(&b[8..14]);
    Some(Payload {
        stream: u16::from_be_bytes([b[2], b[3]]),
        seq32: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        tsc48: u64::from_be_bytes(t),
    })
}

/// Ticks from a 48-bit TX stamp to `now` (modulo 2^48).
#[inline]
pub fn elapsed(tsc48: u64, now: u64) -> u64 {
    (now & TSC_MASK).wrapping_sub(tsc48) & TSC_MASK
}

/// The full sequence number nearest to `last` whose low 32 bits are `seq32`.
#[inline]
pub fn extend_seq(seq32: u32, last: u64) -> u64 {
    let base = last & !0xffff_ffff;
    let c = base | u64::from(seq32);
    let half = 1u64 << 31;
    if c > last.saturating_add(half) && c >= 1 << 32 {
        c - (1 << 32)
    } else if c.saturating_add(half) < last {
        c + (1 << 32)
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_rejects() {
        let mut b = [0u8; 20];
        write(&mut b, 7, 0x1_2345_6789, 0xabcd_0000_0000_1234);
        let p = read(&b).unwrap();
        assert_eq!(p, Payload { stream: 7, seq32: 0x2345_6789, tsc48: 0x0000_0000_1234 });
        assert_eq!(read(&b[..13]), None);
        b[0] = 0;
        assert_eq!(read(&b), None);
        write(&mut b[..5], 1, 1, 1); // too short: untouched, no panic
    }

    #[test]
    fn latency_across_the_48_bit_wrap() {
        assert_eq!(elapsed(TSC_MASK - 9, 1 << 48 | 5), 15);
        assert_eq!(elapsed(100, 250), 150);
    }

    proptest! {
        #[test]
        fn sequence_extension_recovers_nearby_numbers(last in 0u64..1 << 40, d in -(1i64 << 30)..(1i64 << 30)) {
            let seq = (last as i64 + d).max(0) as u64;
            prop_assert_eq!(extend_seq(seq as u32, last), seq);
        }
    }
}
