//! The four codecs, in the stream formats Kafka writes and reads (Kafka's
//! `org.apache.kafka.common.compress`).
//!
//! * **gzip**: RFC 1952 members; several concatenated members read as one stream (Java's
//!   `GZIPInputStream` does the same). Default level: zlib's default, 6 (Kafka's -1).
//! * **snappy**: Kafka's Java client writes snappy-java's `SnappyOutputStream` format (the
//!   "xerial" framing): a 16-byte header (`0x82 "SNAPPY" 0x00`, version 1, compatible version
//!   1, both big-endian int32), then chunks of a big-endian int32 length and a raw snappy block,
//!   each block compressing up to 32 KiB of input. librdkafka writes one raw snappy block with
//!   no framing. Both readers (snappy-java's `SnappyInputStream`, librdkafka) accept both, so
//!   we do too: input of at least 16 bytes starting with the 8 magic bytes is framed, anything
//!   else is raw. We write the framing, like the Java client.
//! * **lz4**: the LZ4 frame format as Kafka's `Lz4BlockOutputStream` writes it: magic
//!   `0x184D2204`, FLG `0x60` (version 1, independent blocks, no block checksum, no content
//!   size, no content checksum), BD `0x40` (64 KiB blocks), the descriptor checksum byte
//!   (`xxh32(FLG BD) >> 8`), blocks (high bit of the length = stored uncompressed), and a zero
//!   end mark. Reading accepts what `Lz4BlockInputStream` accepts: block sizes 64 KiB to 4 MiB,
//!   the content-size field (skipped), block checksums (verified), the content checksum (read,
//!   not verified, as Kafka); it refuses dependent blocks, a dictionary id (Kafka's "reserved
//!   bits"), other versions and a bad descriptor checksum. Kafka's level 9 default selects
//!   lz4-java's fast compressor; other levels its HC compressor. We always use the fast one
//!   (`lz4_flex` has no HC mode): levels are checked for range only.
//! * **zstd**: zstd frames (several concatenated frames read as one stream). Default level 3.
//!
//! Decompression is bounded: the output never grows past the caller's `limit`, whatever
//! lengths the input claims, and exceeding it is [`RecordsError::DecompressedTooLarge`].

use std::io::{Read, Write};

use crate::{Compression, RecordsError};

/// snappy-java's stream header magic.
const SNAPPY_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, version and compatible version.
const SNAPPY_HEADER_LEN: usize = 16;
/// snappy-java's `SnappyOutputStream` default block size.
const SNAPPY_BLOCK: usize = 32 * 1024;

const LZ4_MAGIC: u32 = 0x184D_2204;
/// Version 1 (bits 6-7 = 01) and independent blocks (bit 5).
const LZ4_FLG: u8 = 0x60;
/// 64 KiB maximum block size (bits 4-6 = 4).
const LZ4_BD: u8 = 0x40;
const LZ4_BLOCK: usize = 64 * 1024;
const LZ4_UNCOMPRESSED_BIT: u32 = 0x8000_0000;

/// Kafka's default and accepted levels (`CompressionType`).
pub const GZIP_DEFAULT_LEVEL: i32 = -1;
pub const LZ4_DEFAULT_LEVEL: i32 = 9;
pub const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// Checks a level as Kafka's `Compression.Builder.level` does: gzip 1-9 or -1, lz4 1-17, zstd
/// -131072..=22; none and snappy take no level.
pub fn check_level(codec: Compression, level: i32) -> Result<(), RecordsError> {
    let ok = match codec {
        Compression::Gzip => (1..=9).contains(&level) || level == GZIP_DEFAULT_LEVEL,
        Compression::Lz4 => (1..=17).contains(&level),
        Compression::Zstd => (-131_072..=22).contains(&level),
        Compression::None | Compression::Snappy => false,
    };
    if ok {
        Ok(())
    } else if matches!(codec, Compression::None | Compression::Snappy) {
        Err(RecordsError::InvalidArgument(format!(
            "Compression levels are not defined for this compression type: {codec}"
        )))
    } else {
        Err(RecordsError::InvalidArgument(format!(
            "{codec} doesn't support given compression level: {level}"
        )))
    }
}

fn compress_err(codec: Compression, e: impl std::fmt::Display) -> RecordsError {
    RecordsError::Compress {
        codec,
        reason: e.to_string(),
    }
}

fn decompress_err(codec: Compression, reason: impl Into<String>) -> RecordsError {
    RecordsError::Decompress {
        codec,
        reason: reason.into(),
    }
}

/// Compresses `input` into the stream format Kafka writes for `codec`; `level` is checked as
/// Kafka checks it and defaults to Kafka's default. `Compression::None` returns the input.
pub fn compress(
    codec: Compression,
    level: Option<i32>,
    input: &[u8],
) -> Result<Vec<u8>, RecordsError> {
    if let Some(level) = level {
        check_level(codec, level)?;
    }
    match codec {
        Compression::None => Ok(input.to_vec()),
        Compression::Gzip => {
            let level = match level.unwrap_or(GZIP_DEFAULT_LEVEL) {
                GZIP_DEFAULT_LEVEL => flate2::Compression::default(),
                l => flate2::Compression::new(l.unsigned_abs()),
            };
            let mut enc =
                flate2::write::GzEncoder::new(Vec::with_capacity(input.len() / 2 + 64), level);
            enc.write_all(input).map_err(|e| compress_err(codec, e))?;
            enc.finish().map_err(|e| compress_err(codec, e))
        }
        Compression::Snappy => snappy_framed_compress(input),
        Compression::Lz4 => Ok(lz4_frame_compress(input)),
        Compression::Zstd => zstd::bulk::compress(input, level.unwrap_or(ZSTD_DEFAULT_LEVEL))
            .map_err(|e| compress_err(codec, e)),
    }
}

/// Decompresses a batch's records payload. The output is at most `limit` bytes; more is
/// [`RecordsError::DecompressedTooLarge`]. `Compression::None` copies the input (still bounded).
pub fn decompress(codec: Compression, input: &[u8], limit: usize) -> Result<Vec<u8>, RecordsError> {
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(RecordsError::DecompressedTooLarge { codec, limit });
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(
            codec,
            flate2::read::MultiGzDecoder::new(input),
            input.len(),
            limit,
        ),
        Compression::Snappy => snappy_decompress(input, limit),
        Compression::Lz4 => lz4_frame_decompress(input, limit),
        Compression::Zstd => {
            let dec = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|e| decompress_err(codec, e.to_string()))?;
            read_bounded(codec, dec, input.len(), limit)
        }
    }
}

/// Reads a decoder to its end, never holding more than `limit + 1` bytes.
fn read_bounded(
    codec: Compression,
    reader: impl Read,
    input_len: usize,
    limit: usize,
) -> Result<Vec<u8>, RecordsError> {
    // A guess from the input size, never from anything the input claims.
    let mut out = Vec::with_capacity(
        input_len
            .saturating_mul(4)
            .clamp(64, 1 << 20)
            .min(limit.saturating_add(1)),
    );
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| decompress_err(codec, e.to_string()))?;
    if out.len() > limit {
        return Err(RecordsError::DecompressedTooLarge { codec, limit });
    }
    Ok(out)
}

fn snappy_framed_compress(input: &[u8]) -> Result<Vec<u8>, RecordsError> {
    let codec = Compression::Snappy;
    let mut out = Vec::with_capacity(
        SNAPPY_HEADER_LEN + snap::raw::max_compress_len(input.len().min(SNAPPY_BLOCK)),
    );
    out.extend_from_slice(&SNAPPY_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut enc = snap::raw::Encoder::new();
    let mut block = Vec::new();
    for chunk in input.chunks(SNAPPY_BLOCK) {
        block.resize(snap::raw::max_compress_len(chunk.len()), 0);
        let n = enc
            .compress(chunk, &mut block)
            .map_err(|e| compress_err(codec, e))?;
        let len = i32::try_from(n).map_err(|e| compress_err(codec, e))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(block.get(..n).unwrap_or_default());
    }
    Ok(out)
}

/// Appends one raw snappy block to `out`, keeping `out` within `limit`.
fn snappy_raw_into(block: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), RecordsError> {
    let codec = Compression::Snappy;
    let len = snap::raw::decompress_len(block).map_err(|e| decompress_err(codec, e.to_string()))?;
    let start = out.len();
    let end = start
        .checked_add(len)
        .filter(|&end| end <= limit)
        .ok_or(RecordsError::DecompressedTooLarge { codec, limit })?;
    out.resize(end, 0);
    let dst = out.get_mut(start..end).unwrap_or_default();
    let n = snap::raw::Decoder::new()
        .decompress(block, dst)
        .map_err(|e| decompress_err(codec, e.to_string()))?;
    if n != len {
        return Err(decompress_err(
            codec,
            format!("expected {len} bytes, but decompressed chunk has {n} bytes"),
        ));
    }
    Ok(())
}

/// Reads snappy-java's framing or a raw block, as `SnappyInputStream` does.
fn snappy_decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, RecordsError> {
    let codec = Compression::Snappy;
    if input.is_empty() {
        return Err(decompress_err(codec, "Cannot decompress empty stream"));
    }
    let mut out = Vec::new();
    let framed = input.len() >= SNAPPY_HEADER_LEN && input.starts_with(&SNAPPY_MAGIC);
    if !framed {
        snappy_raw_into(input, &mut out, limit)?;
        return Ok(out);
    }
    let mut pos = SNAPPY_HEADER_LEN;
    // Fewer than 4 bytes left ends the stream (snappy-java ignores such a tail).
    while let Some(len_bytes) = input.get(pos..pos + 4) {
        let chunk_len =
            i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        pos += 4;
        if len_bytes == &SNAPPY_MAGIC[..4] {
            // Another stream concatenated: its header's other 12 bytes follow. snappy-java goes
            // on when they are a valid header and ends the stream otherwise.
            let Some(rest) = input.get(pos..pos + SNAPPY_HEADER_LEN - 4) else {
                return Err(decompress_err(
                    codec,
                    "Insufficient header size in a concatenated block",
                ));
            };
            pos += SNAPPY_HEADER_LEN - 4;
            if !rest.starts_with(&SNAPPY_MAGIC[4..]) {
                break;
            }
            let version = i32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
            if version < 1 {
                return Err(decompress_err(
                    codec,
                    format!("Compressed with an incompatible codec version {version}. At least version 1 is required"),
                ));
            }
            continue;
        }
        let chunk_len = usize::try_from(chunk_len).map_err(|_| {
            decompress_err(
                codec,
                format!("chunkSize is too big or negative : {chunk_len}"),
            )
        })?;
        let chunk = input
            .get(pos..)
            .and_then(|r| r.get(..chunk_len))
            .ok_or_else(|| decompress_err(codec, "failed to read chunk"))?;
        pos += chunk_len;
        snappy_raw_into(chunk, &mut out, limit)?;
    }
    Ok(out)
}

fn lz4_descriptor_checksum(descriptor: &[u8]) -> u8 {
    ((twox_hash::XxHash32::oneshot(0, descriptor) >> 8) & 0xff) as u8
}

fn lz4_frame_compress(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(7 + input.len() / 2 + 16);
    out.extend_from_slice(&LZ4_MAGIC.to_le_bytes());
    out.push(LZ4_FLG);
    out.push(LZ4_BD);
    out.push(lz4_descriptor_checksum(&[LZ4_FLG, LZ4_BD]));
    let mut scratch = vec![0u8; lz4_flex::block::get_maximum_output_size(LZ4_BLOCK)];
    for block in input.chunks(LZ4_BLOCK) {
        // A block no smaller compressed is stored as is, flagged by the length's high bit.
        let compressed = lz4_flex::block::compress_into(block, &mut scratch)
            .ok()
            .filter(|&n| n < block.len())
            .and_then(|n| scratch.get(..n));
        let (bytes, flag) = match compressed {
            Some(c) => (c, 0),
            None => (block, LZ4_UNCOMPRESSED_BIT),
        };
        // Blocks are at most 64 KiB, so the length fits in 31 bits.
        out.extend_from_slice(&(bytes.len() as u32 | flag).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&0u32.to_le_bytes());
    out
}

const LZ4_PREMATURE_EOS: &str = "Stream ended prematurely";

/// What an LZ4 frame descriptor says about the blocks that follow it.
struct Lz4Frame {
    /// Each block is followed by its xxHash32.
    block_checksum: bool,
    /// The end mark is followed by the content's xxHash32.
    content_checksum: bool,
    max_block: usize,
}

fn u32_le(input: &[u8], at: usize) -> Option<u32> {
    let b = input.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Reads an LZ4 frame as Kafka's `Lz4BlockInputStream` does.
fn lz4_frame_decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, RecordsError> {
    let codec = Compression::Lz4;
    let premature_end = || decompress_err(codec, LZ4_PREMATURE_EOS);
    let (frame, mut pos) = lz4_frame_descriptor(input)?;
    let mut out = Vec::new();
    // Never larger than a block, nor than what the limit still allows (plus one byte, so that
    // a block that does not fit is told apart from a corrupt one).
    let mut scratch: Vec<u8> = Vec::new();
    loop {
        let word = u32_le(input, pos).ok_or_else(premature_end)?;
        pos += 4;
        let stored = word & LZ4_UNCOMPRESSED_BIT != 0;
        let size = (word & !LZ4_UNCOMPRESSED_BIT) as usize;
        if size == 0 {
            if frame.content_checksum {
                // Kafka reads the content checksum and does not verify it.
                u32_le(input, pos).ok_or_else(premature_end)?;
            }
            // Kafka stops at the end mark; anything after it is never read.
            return Ok(out);
        }
        if size > frame.max_block {
            return Err(decompress_err(
                codec,
                format!("Block size {size} exceeded max: {}", frame.max_block),
            ));
        }
        let block = input.get(pos..pos + size).ok_or_else(premature_end)?;
        pos += size;
        if frame.block_checksum {
            let expected = u32_le(input, pos).ok_or_else(premature_end)?;
            pos += 4;
            if twox_hash::XxHash32::oneshot(0, block) != expected {
                return Err(decompress_err(codec, "Block checksum mismatch"));
            }
        }
        if stored {
            if block.len() > limit.saturating_sub(out.len()) {
                return Err(RecordsError::DecompressedTooLarge { codec, limit });
            }
            out.extend_from_slice(block);
        } else {
            lz4_block_into(block, frame.max_block, &mut out, &mut scratch, limit)?;
        }
    }
}

/// The frame's magic and descriptor, checked as `Lz4BlockInputStream.readHeader` checks them,
/// and where its first block starts.
fn lz4_frame_descriptor(input: &[u8]) -> Result<(Lz4Frame, usize), RecordsError> {
    let codec = Compression::Lz4;
    let err = |reason: &str| decompress_err(codec, reason);
    if input.len() < 6 {
        return Err(err(LZ4_PREMATURE_EOS));
    }
    if u32_le(input, 0) != Some(LZ4_MAGIC) {
        return Err(err("Stream unsupported (invalid magic bytes)"));
    }
    let flg = input[4];
    let bd = input[5];
    if flg & 0x03 != 0 {
        return Err(err("Reserved bits must be 0"));
    }
    if flg & 0x20 == 0 {
        return Err(err("Dependent block stream is unsupported"));
    }
    if flg >> 6 != 1 {
        return Err(decompress_err(
            codec,
            format!("Version {} is unsupported", flg >> 6),
        ));
    }
    let content_size = flg & 0x08 != 0;
    if bd & 0x0f != 0 {
        return Err(err("Reserved2 field must be 0"));
    }
    let block_size_id = (bd >> 4) & 0x07;
    if !(4..=7).contains(&block_size_id) {
        return Err(err("Block size value must be between 4 and 7"));
    }
    if bd & 0x80 != 0 {
        return Err(err("Reserved3 field must be 0"));
    }
    let mut pos = 6;
    if content_size {
        if input.len() < pos + 8 {
            return Err(err(LZ4_PREMATURE_EOS));
        }
        pos += 8;
    }
    let descriptor = input.get(4..pos).ok_or_else(|| err(LZ4_PREMATURE_EOS))?;
    let hc = *input.get(pos).ok_or_else(|| err(LZ4_PREMATURE_EOS))?;
    if hc != lz4_descriptor_checksum(descriptor) {
        return Err(err("Stream frame descriptor corrupted"));
    }
    let frame = Lz4Frame {
        block_checksum: flg & 0x10 != 0,
        content_checksum: flg & 0x04 != 0,
        max_block: 1usize << (2 * usize::from(block_size_id) + 8),
    };
    Ok((frame, pos + 1))
}

/// Decompresses one compressed block onto `out`, through `scratch`, within `limit`.
#[inline]
fn lz4_block_into(
    block: &[u8],
    max_block: usize,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    limit: usize,
) -> Result<(), RecordsError> {
    let codec = Compression::Lz4;
    let room = limit.saturating_sub(out.len());
    let want = max_block.min(room.saturating_add(1));
    if scratch.len() < want {
        scratch.resize(want, 0);
    }
    let dst = scratch.get_mut(..want).unwrap_or_default();
    let n = match lz4_flex::block::decompress_into(block, dst) {
        Ok(n) => n,
        Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) if want < max_block => {
            return Err(RecordsError::DecompressedTooLarge { codec, limit });
        }
        Err(e) => return Err(decompress_err(codec, e.to_string())),
    };
    if n > room {
        return Err(RecordsError::DecompressedTooLarge { codec, limit });
    }
    out.extend_from_slice(scratch.get(..n).unwrap_or_default());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample(len: usize) -> Vec<u8> {
        // Compressible but not trivially: a repeating text with a counter.
        let mut v = Vec::with_capacity(len);
        let mut i = 0u32;
        while v.len() < len {
            v.extend_from_slice(format!("record-{i} value {} ", i % 97).as_bytes());
            i += 1;
        }
        v.truncate(len);
        v
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in ALL {
            for len in [
                0,
                1,
                100,
                SNAPPY_BLOCK,
                SNAPPY_BLOCK + 1,
                LZ4_BLOCK * 2 + 17,
                300_000,
            ] {
                let data = sample(len);
                let packed = compress(codec, None, &data).unwrap();
                let unpacked = decompress(codec, &packed, len).unwrap();
                assert_eq!(unpacked, data, "{codec} with {len} bytes");
            }
        }
    }

    #[test]
    fn incompressible_data_round_trips() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let data: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for codec in ALL {
            let packed = compress(codec, None, &data).unwrap();
            assert_eq!(
                decompress(codec, &packed, data.len()).unwrap(),
                data,
                "{codec}"
            );
        }
        // LZ4 stores such blocks uncompressed, with the high bit of the length set.
        let packed = compress(Compression::Lz4, None, &data).unwrap();
        assert_eq!(
            packed[7..11],
            (LZ4_BLOCK as u32 | LZ4_UNCOMPRESSED_BIT).to_le_bytes()
        );
    }

    #[test]
    fn levels_are_checked_like_kafka() {
        let data = sample(10_000);
        for (codec, level) in [
            (Compression::Gzip, 1),
            (Compression::Gzip, 9),
            (Compression::Gzip, -1),
            (Compression::Lz4, 1),
            (Compression::Lz4, 17),
            (Compression::Zstd, -5),
            (Compression::Zstd, 22),
        ] {
            let packed = compress(codec, Some(level), &data).unwrap();
            assert_eq!(decompress(codec, &packed, data.len()).unwrap(), data);
        }
        for (codec, level) in [
            (Compression::Gzip, 0),
            (Compression::Gzip, 10),
            (Compression::Lz4, 0),
            (Compression::Lz4, 18),
            (Compression::Zstd, 23),
            (Compression::Snappy, 1),
        ] {
            assert!(matches!(
                compress(codec, Some(level), &data),
                Err(RecordsError::InvalidArgument(_))
            ));
        }
    }

    #[test]
    fn limits_bound_every_codec() {
        // A "zip bomb": 4 MiB of zeros compresses to a few KiB.
        let zeros = vec![0u8; 4 << 20];
        for codec in ALL {
            let packed = compress(codec, None, &zeros).unwrap();
            assert!(
                matches!(
                    decompress(codec, &packed, 1 << 20),
                    Err(RecordsError::DecompressedTooLarge { limit, .. }) if limit == 1 << 20
                ),
                "{codec}"
            );
            assert_eq!(decompress(codec, &packed, 4 << 20).unwrap().len(), 4 << 20);
        }
    }

    #[test]
    fn snappy_writes_xerial_framing_and_reads_raw_blocks() {
        let data = sample(70_000);
        let packed = compress(Compression::Snappy, None, &data).unwrap();
        assert_eq!(&packed[..8], &SNAPPY_MAGIC);
        assert_eq!(&packed[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        // Three chunks: 32 KiB, 32 KiB, the rest.
        let mut pos = 16;
        let mut chunks = 0;
        while pos < packed.len() {
            let len = u32::from_be_bytes(packed[pos..pos + 4].try_into().unwrap()) as usize;
            pos += 4 + len;
            chunks += 1;
        }
        assert_eq!((chunks, pos), (3, packed.len()));
        // librdkafka sends one raw block.
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, data.len()).unwrap(),
            data
        );
        // Two framed streams back to back read as one.
        let mut twice = packed.clone();
        twice.extend_from_slice(&packed);
        let mut expected = data.clone();
        expected.extend_from_slice(&data);
        assert_eq!(
            decompress(Compression::Snappy, &twice, expected.len()).unwrap(),
            expected
        );
        // An empty framed stream is the header alone.
        assert_eq!(compress(Compression::Snappy, None, &[]).unwrap().len(), 16);
    }

    #[test]
    fn snappy_hostile_inputs() {
        let c = Compression::Snappy;
        let mut framed = SNAPPY_MAGIC.to_vec();
        framed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        let mut negative = framed.clone();
        negative.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            decompress(c, &negative, 100),
            Err(RecordsError::Decompress { .. })
        ));
        let mut huge = framed.clone();
        huge.extend_from_slice(&i32::MAX.to_be_bytes());
        huge.extend_from_slice(&[1, 2, 3]);
        assert!(matches!(
            decompress(c, &huge, 100),
            Err(RecordsError::Decompress { .. })
        ));
        // A raw block claiming 1 GiB is refused before anything is allocated.
        let claim = [0x80, 0x80, 0x80, 0x80, 0x04, 0x00];
        assert!(matches!(
            decompress(c, &claim, 1 << 20),
            Err(RecordsError::DecompressedTooLarge { .. })
        ));
        assert!(decompress(c, &[], 100).is_err());
        assert!(decompress(c, &[0xff, 0xff, 0xff], 100).is_err());
    }

    #[test]
    fn lz4_frame_is_kafkas_and_interoperates() {
        let data = sample(150_000);
        let packed = compress(Compression::Lz4, None, &data).unwrap();
        assert_eq!(&packed[..4], &LZ4_MAGIC.to_le_bytes());
        assert_eq!(packed[4], 0x60);
        assert_eq!(packed[5], 0x40);
        assert_eq!(&packed[packed.len() - 4..], &[0, 0, 0, 0]);
        // The reference frame decoder reads our frames.
        let mut dec = lz4_flex::frame::FrameDecoder::new(&packed[..]);
        let mut out = Vec::new();
        dec.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
        // We read the reference encoder's frames, with every checksum it can write.
        for (block_checksums, content_checksum, content_size) in [
            (false, false, false),
            (true, true, true),
            (true, false, false),
            (false, true, false),
        ] {
            let mut info = lz4_flex::frame::FrameInfo::new()
                .block_mode(lz4_flex::frame::BlockMode::Independent)
                .block_checksums(block_checksums)
                .content_checksum(content_checksum);
            if content_size {
                info = info.content_size(Some(data.len() as u64));
            }
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(&data).unwrap();
            let frame = enc.finish().unwrap();
            assert_eq!(
                decompress(Compression::Lz4, &frame, data.len()).unwrap(),
                data
            );
        }
    }

    #[test]
    fn lz4_refuses_what_kafka_refuses() {
        let data = sample(1000);
        let good = compress(Compression::Lz4, None, &data).unwrap();
        let with = |i: usize, b: u8| {
            let mut v = good.clone();
            v[i] = b;
            v
        };
        let c = Compression::Lz4;
        // Bad magic, dependent blocks, dictionary id bit, version 2, bad block size, bad HC.
        for bad in [
            with(0, 0),
            with(4, 0x40),
            with(4, 0x61),
            with(4, 0xa0),
            with(5, 0x30),
            with(6, good[6] ^ 1),
        ] {
            assert!(matches!(
                decompress(c, &bad, 10_000),
                Err(RecordsError::Decompress { .. })
            ));
        }
        // Linked blocks from the reference encoder are refused as Kafka refuses them.
        let info = lz4_flex::frame::FrameInfo::new().block_mode(lz4_flex::frame::BlockMode::Linked);
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(&data).unwrap();
        assert!(decompress(c, &enc.finish().unwrap(), 10_000).is_err());
        // Missing end mark, truncated block, block larger than the frame's maximum.
        assert!(decompress(c, &good[..good.len() - 4], 10_000).is_err());
        assert!(decompress(c, &good[..12], 10_000).is_err());
        let mut oversized = good[..7].to_vec();
        oversized.extend_from_slice(&(LZ4_BLOCK as u32 + 1).to_le_bytes());
        assert!(decompress(c, &oversized, 1 << 20).is_err());
        // Garbage inside a compressed block.
        let mut garbage = good[..7].to_vec();
        garbage.extend_from_slice(&8u32.to_le_bytes());
        garbage.extend_from_slice(&[0xff; 8]);
        garbage.extend_from_slice(&0u32.to_le_bytes());
        assert!(decompress(c, &garbage, 1 << 20).is_err());
    }

    #[test]
    fn gzip_and_zstd_hostile_inputs() {
        for codec in [Compression::Gzip, Compression::Zstd] {
            let data = sample(5000);
            let packed = compress(codec, None, &data).unwrap();
            assert!(
                decompress(codec, &packed[..packed.len() / 2], 10_000).is_err(),
                "{codec} truncated"
            );
            assert!(
                decompress(codec, &[1, 2, 3, 4, 5, 6, 7, 8], 10_000).is_err(),
                "{codec} garbage"
            );
        }
        // Concatenated zstd frames too, as zstd-jni's stream reads them.
        let a = compress(Compression::Zstd, None, b"hello ").unwrap();
        let b = compress(Compression::Zstd, Some(19), b"world").unwrap();
        assert_eq!(
            decompress(Compression::Zstd, &[a, b].concat(), 100).unwrap(),
            b"hello world"
        );
        // Concatenated gzip members read as one stream, as GZIPInputStream reads them.
        let a = compress(Compression::Gzip, None, b"hello ").unwrap();
        let b = compress(Compression::Gzip, None, b"world").unwrap();
        assert_eq!(
            decompress(Compression::Gzip, &[a, b].concat(), 100).unwrap(),
            b"hello world"
        );
    }
}
