//! Runtime helpers used by the generated codecs (`messages`, `records`).
//!
//! Readers never trust a length from the wire: every length is checked against the bytes that
//! remain before anything is read or allocated.
use std::collections::BTreeMap;
use std::ops::RangeBounds;

use anyhow::{bail, Result};
use bytes::Bytes;
use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};
use uuid::Uuid;

fn need<B: ByteBuf>(buf: &B, n: usize, what: &str) -> Result<()> {
    if buf.remaining() < n {
        bail!(
            "truncated input: {what} needs {n} bytes, {} remain",
            buf.remaining()
        );
    }
    Ok(())
}

/// Memory an array may reserve ahead of its elements even when fewer input bytes remain: a
/// few small elements should not each grow the `Vec`.
const RESERVE_FLOOR_BYTES: usize = 1024;

/// What one unknown tagged field costs in its map (the `(i32, Bytes)` entry and its share of a
/// B-tree node), charged to the decode budget.
const TAGGED_FIELD_COST: usize = 64;

/// An empty `Vec` for an array of `n` declared elements, each at least `min_size` bytes on the
/// wire. Fails, before allocating, when the remaining input cannot hold `n` elements (Kafka's
/// "Tried to allocate a collection of size n, but there are only m bytes remaining"; it counts
/// at least one byte per element as we do), and when the decode budget cannot pay for them
/// ([`crate::budget`]). Reserves no more elements than the input can back and no more memory
/// than about the input's size; the `Vec` grows past that as real elements are decoded.
pub fn array_with_capacity<T, B: ByteBuf>(n: usize, min_size: usize, buf: &B) -> Result<Vec<T>> {
    let remaining = buf.remaining();
    let min_size = min_size.max(1);
    if n > remaining / min_size {
        bail!(
            "array of {n} elements of at least {min_size} bytes each, but only {remaining} bytes remain"
        );
    }
    let element = std::mem::size_of::<T>();
    crate::budget::charge(n.saturating_mul(element))?;
    let by_memory = remaining.max(RESERVE_FLOOR_BYTES) / element.max(1);
    Ok(Vec::with_capacity(n.min(by_memory)))
}

macro_rules! fixed {
    ($read:ident, $write:ident, $t:ty, $get:ident, $put:ident, $n:expr) => {
        pub fn $read<B: ByteBuf>(buf: &mut B) -> Result<$t> {
            need(buf, $n, stringify!($t))?;
            Ok(buf.$get())
        }
        pub fn $write<B: ByteBufMut>(buf: &mut B, v: $t) {
            buf.$put(v)
        }
    };
}

fixed!(read_i8, write_i8, i8, get_i8, put_i8, 1);
fixed!(read_i16, write_i16, i16, get_i16, put_i16, 2);
fixed!(read_i32, write_i32, i32, get_i32, put_i32, 4);
fixed!(read_i64, write_i64, i64, get_i64, put_i64, 8);
fixed!(read_u16, write_u16, u16, get_u16, put_u16, 2);
fixed!(read_f64, write_f64, f64, get_f64, put_f64, 8);

pub fn read_bool<B: ByteBuf>(buf: &mut B) -> Result<bool> {
    Ok(read_i8(buf)? != 0)
}

pub fn write_bool<B: ByteBufMut>(buf: &mut B, v: bool) {
    buf.put_u8(u8::from(v))
}

pub fn read_uuid<B: ByteBuf>(buf: &mut B) -> Result<Uuid> {
    need(buf, 16, "uuid")?;
    let mut b = [0u8; 16];
    buf.copy_to_slice(&mut b);
    Ok(Uuid::from_bytes(b))
}

pub fn write_uuid<B: ByteBufMut>(buf: &mut B, v: &Uuid) {
    buf.put_slice(v.as_bytes())
}

/// A nullable uuid: Kafka has no null uuid on the wire, so null is the all-zero uuid.
pub fn read_nullable_uuid<B: ByteBuf>(buf: &mut B) -> Result<Option<Uuid>> {
    let u = read_uuid(buf)?;
    Ok(if u.is_nil() { None } else { Some(u) })
}

pub fn write_nullable_uuid<B: ByteBufMut>(buf: &mut B, v: &Option<Uuid>) {
    write_uuid(buf, &v.unwrap_or(Uuid::nil()))
}

pub fn read_uvarint<B: ByteBuf>(buf: &mut B) -> Result<u32> {
    let mut value: u32 = 0;
    for i in 0..5 {
        need(buf, 1, "varint")?;
        let b = buf.get_u8();
        if i == 4 && b > 0x0f {
            bail!("unsigned varint is longer than 32 bits");
        }
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("unsigned varint is longer than 5 bytes")
}

pub fn write_uvarint<B: ByteBufMut>(buf: &mut B, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8)
}

pub fn uvarint_size(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// Reads a length prefix: classic int16/int32 (-1 = null) or compact uvarint (0 = null).
fn read_len<B: ByteBuf>(
    buf: &mut B,
    flexible: bool,
    classic_is_i16: bool,
) -> Result<Option<usize>> {
    if flexible {
        let n = read_uvarint(buf)?;
        Ok(if n == 0 { None } else { Some((n - 1) as usize) })
    } else {
        let n = if classic_is_i16 {
            i32::from(read_i16(buf)?)
        } else {
            read_i32(buf)?
        };
        match n {
            -1 => Ok(None),
            n if n < 0 => bail!("negative length {n}"),
            n => Ok(Some(n as usize)),
        }
    }
}

fn write_len<B: ByteBufMut>(
    buf: &mut B,
    len: Option<usize>,
    flexible: bool,
    classic_is_i16: bool,
) -> Result<()> {
    if flexible {
        match len {
            None => write_uvarint(buf, 0),
            Some(n) => {
                let n = u32::try_from(n).ok().filter(|n| *n < u32::MAX);
                let Some(n) = n else {
                    bail!("length too large for a compact encoding")
                };
                write_uvarint(buf, n + 1)
            }
        }
    } else if classic_is_i16 {
        match len {
            None => write_i16(buf, -1),
            Some(n) => match i16::try_from(n) {
                Ok(n) => write_i16(buf, n),
                Err(_) => bail!("string of {n} bytes is longer than {}", i16::MAX),
            },
        }
    } else {
        match len {
            None => write_i32(buf, -1),
            Some(n) => match i32::try_from(n) {
                Ok(n) => write_i32(buf, n),
                Err(_) => bail!("length {n} does not fit an int32"),
            },
        }
    }
    Ok(())
}

fn len_size(len: Option<usize>, flexible: bool, classic: usize) -> usize {
    if flexible {
        uvarint_size(len.map_or(0, |n| (n as u32).saturating_add(1)))
    } else {
        classic
    }
}

pub fn read_nullable_string<B: ByteBuf>(buf: &mut B, flexible: bool) -> Result<Option<String>> {
    let Some(n) = read_len(buf, flexible, true)? else {
        return Ok(None);
    };
    need(buf, n, "string")?;
    crate::budget::charge(n)?;
    let mut bytes = vec![0; n];
    buf.copy_to_slice(&mut bytes);
    match String::from_utf8(bytes) {
        Ok(s) => Ok(Some(s)),
        Err(_) => bail!("string is not valid UTF-8"),
    }
}

pub fn read_string<B: ByteBuf>(buf: &mut B, flexible: bool) -> Result<String> {
    match read_nullable_string(buf, flexible)? {
        Some(s) => Ok(s),
        None => bail!("non-nullable string was null"),
    }
}

pub fn write_nullable_string<B: ByteBufMut>(
    buf: &mut B,
    v: Option<&str>,
    flexible: bool,
) -> Result<()> {
    write_len(buf, v.map(str::len), flexible, true)?;
    if let Some(s) = v {
        buf.put_slice(s.as_bytes());
    }
    Ok(())
}

pub fn write_string<B: ByteBufMut>(buf: &mut B, v: &str, flexible: bool) -> Result<()> {
    write_nullable_string(buf, Some(v), flexible)
}

pub fn nullable_string_size(v: Option<&str>, flexible: bool) -> usize {
    len_size(v.map(str::len), flexible, 2) + v.map_or(0, str::len)
}

pub fn string_size(v: &str, flexible: bool) -> usize {
    nullable_string_size(Some(v), flexible)
}

pub fn read_nullable_bytes<B: ByteBuf>(buf: &mut B, flexible: bool) -> Result<Option<Bytes>> {
    let Some(n) = read_len(buf, flexible, false)? else {
        return Ok(None);
    };
    need(buf, n, "bytes")?;
    Ok(Some(get_bytes(buf, n)?))
}

/// Takes `n` bytes, which must remain. Input held in `Bytes` (a request frame) gives a slice of
/// it for free; any other buffer copies, and the copy is charged to the decode budget.
fn get_bytes<B: ByteBuf>(buf: &mut B, n: usize) -> Result<Bytes> {
    let at = buf.chunk().as_ptr();
    let bytes = buf.get_bytes(n);
    if n > 0 && bytes.as_ptr() != at {
        crate::budget::charge(n)?;
    }
    Ok(bytes)
}

pub fn read_bytes<B: ByteBuf>(buf: &mut B, flexible: bool) -> Result<Bytes> {
    match read_nullable_bytes(buf, flexible)? {
        Some(b) => Ok(b),
        None => bail!("non-nullable bytes were null"),
    }
}

pub fn write_nullable_bytes<B: ByteBufMut>(
    buf: &mut B,
    v: Option<&Bytes>,
    flexible: bool,
) -> Result<()> {
    write_len(buf, v.map(Bytes::len), flexible, false)?;
    if let Some(b) = v {
        buf.put_slice(b);
    }
    Ok(())
}

pub fn write_bytes<B: ByteBufMut>(buf: &mut B, v: &Bytes, flexible: bool) -> Result<()> {
    write_nullable_bytes(buf, Some(v), flexible)
}

pub fn nullable_bytes_size(v: Option<&Bytes>, flexible: bool) -> usize {
    len_size(v.map(Bytes::len), flexible, 4) + v.map_or(0, Bytes::len)
}

pub fn bytes_size(v: &Bytes, flexible: bool) -> usize {
    nullable_bytes_size(Some(v), flexible)
}

pub fn write_nullable_records<B: ByteBufMut>(
    buf: &mut B,
    v: Option<&crate::RecordSet>,
    flexible: bool,
) -> Result<()> {
    write_len(buf, v.map(crate::RecordSet::len), flexible, false)?;
    for part in v.map_or(&[][..], crate::RecordSet::parts) {
        buf.put_slice(part);
    }
    Ok(())
}

pub fn write_records<B: ByteBufMut>(
    buf: &mut B,
    v: &crate::RecordSet,
    flexible: bool,
) -> Result<()> {
    write_nullable_records(buf, Some(v), flexible)
}

pub fn nullable_records_size(v: Option<&crate::RecordSet>, flexible: bool) -> usize {
    len_size(v.map(crate::RecordSet::len), flexible, 4) + v.map_or(0, crate::RecordSet::len)
}

pub fn records_size(v: &crate::RecordSet, flexible: bool) -> usize {
    nullable_records_size(Some(v), flexible)
}

/// An array length prefix; `None` is a null array.
pub fn read_array_len<B: ByteBuf>(buf: &mut B, flexible: bool) -> Result<Option<usize>> {
    read_len(buf, flexible, false)
}

pub fn write_array_len<B: ByteBufMut>(
    buf: &mut B,
    len: Option<usize>,
    flexible: bool,
) -> Result<()> {
    write_len(buf, len, flexible, false)
}

pub fn array_len_size(len: Option<usize>, flexible: bool) -> usize {
    len_size(len, flexible, 4)
}

/// Marker byte in front of a nullable struct: -1 for null, 1 for present.
pub fn read_struct_marker<B: ByteBuf>(buf: &mut B) -> Result<bool> {
    Ok(read_i8(buf)? >= 0)
}

pub fn write_struct_marker<B: ByteBufMut>(buf: &mut B, present: bool) {
    write_i8(buf, if present { 1 } else { -1 })
}

/// Takes the `size` bytes of one tagged field.
pub fn take<B: ByteBuf>(buf: &mut B, size: usize) -> Result<Bytes> {
    need(buf, size, "tagged field")?;
    get_bytes(buf, size)
}

/// Keeps a tagged field this version of the schema does not know, charged to the decode budget.
pub fn insert_unknown_tagged(
    fields: &mut BTreeMap<i32, Bytes>,
    tag: u32,
    data: Bytes,
) -> Result<()> {
    let Ok(tag) = i32::try_from(tag) else {
        bail!("tag {tag} out of range")
    };
    crate::budget::charge(TAGGED_FIELD_COST)?;
    fields.insert(tag, data);
    Ok(())
}

/// Writes the unknown tagged fields whose tags fall in `range`, in tag order.
pub fn write_unknown_tagged<B: ByteBufMut, R: RangeBounds<i32>>(
    buf: &mut B,
    fields: &BTreeMap<i32, Bytes>,
    range: R,
) -> Result<()> {
    for (tag, data) in fields.range(range) {
        let Ok(tag) = u32::try_from(*tag) else {
            bail!("negative tag {tag}")
        };
        let Ok(len) = u32::try_from(data.len()) else {
            bail!("tagged field too large")
        };
        write_uvarint(buf, tag);
        write_uvarint(buf, len);
        buf.put_slice(data);
    }
    Ok(())
}

pub fn unknown_tagged_size(fields: &BTreeMap<i32, Bytes>) -> usize {
    fields
        .iter()
        .map(|(tag, data)| uvarint_size(*tag as u32) + uvarint_size(data.len() as u32) + data.len())
        .sum()
}

/// The error for a value that the negotiated version cannot carry.
pub fn unsupported_field(type_name: &str, field: &str, version: i16) -> anyhow::Error {
    anyhow::anyhow!(
        "{type_name}.{field} has a non-default value but version {version} does not support it"
    )
}

/// The error for a null in a version where the field is not nullable.
pub fn null_not_allowed(type_name: &str, field: &str, version: i16) -> anyhow::Error {
    anyhow::anyhow!("{type_name}.{field} is null but not nullable in version {version}")
}

/// Decodes a `T` from `body` at `version`; when that succeeds, checks that encoding the value
/// takes the bytes `compute_size` says and that decoding them gives the same value. `None`
/// when `body` does not decode; `Some(Err)` names what differed. For the fuzz targets: any
/// input that decodes must round-trip.
pub fn decode_round_trip<T>(version: i16, body: &mut Bytes) -> Option<Result<(), String>>
where
    T: kafka_protocol::protocol::Encodable
        + kafka_protocol::protocol::Decodable
        + PartialEq
        + std::fmt::Debug,
{
    let value = T::decode(body, version).ok()?;
    Some(check_reencoding(&value, version))
}

fn check_reencoding<T>(value: &T, version: i16) -> Result<(), String>
where
    T: kafka_protocol::protocol::Encodable
        + kafka_protocol::protocol::Decodable
        + PartialEq
        + std::fmt::Debug,
{
    let mut out = bytes::BytesMut::new();
    value
        .encode(&mut out, version)
        .map_err(|e| format!("v{version}: a decoded value does not encode: {e}"))?;
    let size = value
        .compute_size(version)
        .map_err(|e| format!("v{version}: a decoded value has no size: {e}"))?;
    if size != out.len() {
        return Err(format!(
            "v{version}: compute_size {size} but encoded {} bytes: {value:?}",
            out.len()
        ));
    }
    let again = T::decode(&mut out.freeze(), version)
        .map_err(|e| format!("v{version}: the re-encoding does not decode: {e}"))?;
    if &again != value {
        return Err(format!(
            "v{version}: decoded value differs after a round trip\n  first:  {value:?}\n  second: {again:?}"
        ));
    }
    Ok(())
}

/// One generated type and the check that a random value of it survives encode/decode.
#[cfg(any(test, feature = "arbitrary"))]
pub struct RoundTripCase {
    pub name: &'static str,
    pub versions: (i16, i16),
    pub check: fn(&mut rand::rngs::StdRng, i16) -> Result<(), String>,
    /// A random value's encoding (seeds for the fuzz targets).
    pub sample: fn(&mut rand::rngs::StdRng, i16) -> Result<Bytes, String>,
}

#[cfg(any(test, feature = "arbitrary"))]
pub fn encode_sample<T: kafka_protocol::protocol::Encodable>(
    value: &T,
    version: i16,
) -> Result<Bytes, String> {
    let mut out = bytes::BytesMut::new();
    value
        .encode(&mut out, version)
        .map_err(|e| format!("encode v{version}: {e}"))?;
    Ok(out.freeze())
}

/// One generated struct, its versions, and its `min_wire_size` beside its default value's
/// encoded size.
#[cfg(any(test, feature = "arbitrary"))]
pub struct MinSizeCase {
    pub name: &'static str,
    pub versions: (i16, i16),
    pub sizes: fn(i16) -> (usize, Result<usize>),
}

#[cfg(any(test, feature = "arbitrary"))]
pub fn arbitrary_string<R: rand::Rng + ?Sized>(rng: &mut R) -> String {
    const CHARS: &[char] = &['a', 'z', 'A', '0', '-', '.', '_', ' ', 'é', '流', '🦀'];
    let len = rng.random_range(0..12usize);
    (0..len)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())])
        .collect()
}

#[cfg(any(test, feature = "arbitrary"))]
pub fn arbitrary_bytes<R: rand::Rng + ?Sized>(rng: &mut R) -> Bytes {
    let len = rng.random_range(0..16usize);
    Bytes::from((0..len).map(|_| rng.random::<u8>()).collect::<Vec<u8>>())
}

/// Encodes `value` at `version`, checks the computed size, decodes it back, compares, and
/// checks that re-encoding gives the same bytes.
#[cfg(any(test, feature = "arbitrary"))]
pub fn check_round_trip<T>(value: &T, version: i16) -> Result<(), String>
where
    T: kafka_protocol::protocol::Encodable
        + kafka_protocol::protocol::Decodable
        + PartialEq
        + std::fmt::Debug,
{
    let mut buf = bytes::BytesMut::new();
    value
        .encode(&mut buf, version)
        .map_err(|e| format!("encode v{version}: {e}"))?;
    let size = value
        .compute_size(version)
        .map_err(|e| format!("size v{version}: {e}"))?;
    if size != buf.len() {
        return Err(format!(
            "v{version}: compute_size {size} but encoded {} bytes",
            buf.len()
        ));
    }
    let first = buf.clone().freeze();
    use bytes::Buf as _;
    let mut input = buf.freeze();
    let decoded = T::decode(&mut input, version).map_err(|e| format!("decode v{version}: {e}"))?;
    if input.has_remaining() {
        return Err(format!(
            "v{version}: {} bytes left after decode",
            input.remaining()
        ));
    }
    if &decoded != value {
        return Err(format!(
            "v{version}: decoded value differs\n  sent: {value:?}\n  got:  {decoded:?}"
        ));
    }
    let mut again = bytes::BytesMut::new();
    decoded
        .encode(&mut again, version)
        .map_err(|e| format!("re-encode v{version}: {e}"))?;
    if again.freeze() != first {
        return Err(format!("v{version}: re-encoding gave different bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn uvarint_round_trips_and_sizes_match() {
        for v in [
            0u32,
            1,
            127,
            128,
            16383,
            16384,
            2_097_151,
            2_097_152,
            u32::MAX,
        ] {
            let mut b = BytesMut::new();
            write_uvarint(&mut b, v);
            assert_eq!(b.len(), uvarint_size(v));
            let mut r = b.freeze();
            assert_eq!(read_uvarint(&mut r).unwrap(), v);
        }
    }

    #[test]
    fn overlong_uvarint_is_an_error() {
        let mut r = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(read_uvarint(&mut r).is_err());
    }

    #[test]
    fn hostile_lengths_fail_without_allocating() {
        let mut r = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff]);
        let n = read_array_len(&mut r, false).unwrap().unwrap();
        assert!(array_with_capacity::<u8, _>(n, 1, &r).is_err());
        let mut r = Bytes::from_static(&[0x7f, 0xff, b'a']);
        assert!(read_string(&mut r, false).is_err());
        let mut r = Bytes::from_static(&[0xff, 0xfe]);
        assert!(
            read_nullable_string(&mut r, false).is_err(),
            "-2 is not a valid length"
        );
    }

    #[test]
    fn copies_are_charged_to_the_budget_and_slices_are_not() {
        let spent = |read: &dyn Fn() -> Result<()>| {
            crate::budget::with_limit(1000, || {
                read().unwrap();
                1000 - crate::budget::remaining().unwrap()
            })
        };
        let input = [0u8, 0, 0, 5, 1, 2, 3, 4, 5];
        assert_eq!(spent(&|| read_bytes(&mut &input[..], false).map(drop)), 5);
        let shared = Bytes::copy_from_slice(&input);
        assert_eq!(
            spent(&|| read_bytes(&mut shared.clone(), false).map(drop)),
            0
        );
        let string = [0u8, 3, b'a', b'b', b'c'];
        assert_eq!(spent(&|| read_string(&mut &string[..], false).map(drop)), 3);
        assert_eq!(
            spent(&|| insert_unknown_tagged(&mut BTreeMap::new(), 7, Bytes::new())),
            TAGGED_FIELD_COST
        );
        assert_eq!(
            spent(&|| array_with_capacity::<u64, _>(3, 8, &Bytes::from_static(&[0; 24])).map(drop)),
            24
        );
    }

    #[test]
    fn a_spent_budget_fails_the_decode() {
        let input = [0u8, 3, b'a', b'b', b'c'];
        let r = crate::budget::with_limit(2, || read_string(&mut &input[..], false));
        assert!(r.is_err());
        let many = Bytes::from_static(&[0; 64]);
        let r = crate::budget::with_limit(100, || array_with_capacity::<u64, _>(16, 4, &many));
        assert!(r.is_err(), "16 elements of 8 bytes exceed 100");
    }

    #[test]
    fn strings_use_classic_or_compact_prefixes() {
        let mut b = BytesMut::new();
        write_string(&mut b, "ab", false).unwrap();
        write_string(&mut b, "ab", true).unwrap();
        write_nullable_string(&mut b, None, false).unwrap();
        write_nullable_string(&mut b, None, true).unwrap();
        assert_eq!(&b[..], &[0, 2, b'a', b'b', 3, b'a', b'b', 0xff, 0xff, 0]);
    }

    #[test]
    fn invalid_utf8_is_rejected() {
        let mut r = Bytes::from_static(&[0, 1, 0xff]);
        assert!(read_string(&mut r, false).is_err());
    }
}
