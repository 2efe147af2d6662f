//! Zig-zag varints and varlongs as Kafka's `ByteUtils` reads and writes them.
//!
//! Reading follows Kafka exactly, including its leniency: a varint is at most 5 bytes and the
//! 5th byte must not have its high bit set, but the bits of that byte above bit 31 of the result
//! are dropped rather than refused; a varlong is at most 10 bytes, and the 10th byte only
//! contributes its lowest bit.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes ended inside the number.
    Eof,
    /// Still continuing after 5 bytes (varint) or 10 bytes (varlong).
    TooLong,
}

/// Reads an unsigned varint at `*pos`, advancing `*pos`.
fn read_unsigned_varint(buf: &[u8], pos: &mut usize) -> Result<u32, VarintError> {
    let mut result: u32 = 0;
    for i in 0..5 {
        let b = *buf.get(*pos).ok_or(VarintError::Eof)?;
        *pos += 1;
        if i == 4 {
            if b & 0x80 != 0 {
                return Err(VarintError::TooLong);
            }
            // Only the low 4 bits fit; Kafka shifts the rest out silently.
            result |= u32::from(b) << 28;
            return Ok(result);
        }
        result |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(result);
        }
    }
    Err(VarintError::TooLong)
}

/// Reads a zig-zag varint (Kafka's `readVarint`).
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    let v = read_unsigned_varint(buf, pos)?;
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

/// Reads a zig-zag varlong (Kafka's `readVarlong`).
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let mut value: u64 = 0;
    let mut shift: u32 = 0;
    loop {
        let b = *buf.get(*pos).ok_or(VarintError::Eof)?;
        *pos += 1;
        if b & 0x80 == 0 {
            value |= u64::from(b) << shift;
            break;
        }
        value |= u64::from(b & 0x7f) << shift;
        shift += 7;
        if shift > 63 {
            return Err(VarintError::TooLong);
        }
    }
    Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
}

/// Appends a zig-zag varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, v: i32) {
    let mut u = ((v << 1) ^ (v >> 31)) as u32;
    while u & !0x7f != 0 {
        out.push(((u & 0x7f) | 0x80) as u8);
        u >>= 7;
    }
    out.push(u as u8);
}

/// Appends a zig-zag varlong.
pub(crate) fn write_varlong(out: &mut Vec<u8>, v: i64) {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    while u & !0x7f != 0 {
        out.push(((u & 0x7f) | 0x80) as u8);
        u >>= 7;
    }
    out.push(u as u8);
}

/// Encoded size of a zig-zag varint.
pub(crate) fn varint_len(v: i32) -> usize {
    let u = ((v << 1) ^ (v >> 31)) as u32;
    let bits = 32 - u.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Encoded size of a zig-zag varlong.
pub(crate) fn varlong_len(v: i64) -> usize {
    let u = ((v << 1) ^ (v >> 63)) as u64;
    let bits = 64 - u.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(bytes: &[u8]) -> Result<i32, VarintError> {
        read_varint(bytes, &mut 0)
    }

    #[test]
    fn known_encodings() {
        // Values from the protobuf zig-zag table, as Kafka's ByteUtilsTest uses them.
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-2, &[0x03]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, *v);
            assert_eq!(&out[..], *bytes, "encoding {v}");
            assert_eq!(varint_len(*v), bytes.len());
            assert_eq!(varint(bytes), Ok(*v));
        }
    }

    #[test]
    fn round_trips() {
        for v in [
            0i64,
            1,
            -1,
            300,
            -300,
            i64::from(i32::MAX),
            i64::MAX,
            i64::MIN,
            1 << 62,
        ] {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v));
            let mut pos = 0;
            assert_eq!(read_varlong(&out, &mut pos), Ok(v));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn too_long_and_truncated() {
        assert_eq!(
            varint(&[0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(VarintError::TooLong)
        );
        assert_eq!(varint(&[0x80, 0x80]), Err(VarintError::Eof));
        assert_eq!(varint(&[]), Err(VarintError::Eof));
        assert_eq!(read_varlong(&[0xff; 10], &mut 0), Err(VarintError::TooLong));
        assert_eq!(read_varlong(&[0xff; 9], &mut 0), Err(VarintError::Eof));
        // Kafka keeps only the low 4 bits of a 5th byte below 0x80.
        assert_eq!(
            varint(&[0x80, 0x80, 0x80, 0x80, 0x7f]),
            Ok(varint(&[0x80, 0x80, 0x80, 0x80, 0x0f]).unwrap())
        );
    }
}
