//! The records inside a batch (Kafka's `DefaultRecord`), and a whole batch with its records.
//!
//! ```text
//! Record =>
//!   Length => varint (bytes after this field)
//!   Attributes => int8 (unused)
//!   TimestampDelta => varlong
//!   OffsetDelta => varint
//!   KeyLength => varint (negative: null key)
//!   Key => bytes
//!   ValueLength => varint (negative: null value)
//!   Value => bytes
//!   HeadersCount => varint
//!   Headers => [HeaderKeyLength varint, HeaderKey bytes, HeaderValueLength varint, HeaderValue bytes]
//! ```

use bytes::Bytes;

use crate::header::{BatchHeader, HEADER_LEN};
use crate::varint::{self, VarintError};
use crate::{compression, Compression, RecordsError, TimestampType};

/// One record header. The key is kept as the bytes on the wire: Kafka's broker never decodes
/// it (its `RecordHeader` holds the key as a buffer and its Java clients decode it as UTF-8
/// replacing malformed sequences), so a broker must accept and return any bytes unchanged.
/// [`RecordHeader::key_str`] reads it as UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordHeader {
    pub key: Bytes,
    pub value: Option<Bytes>,
}

impl RecordHeader {
    pub fn new(key: impl Into<Bytes>, value: Option<Bytes>) -> RecordHeader {
        RecordHeader {
            key: key.into(),
            value,
        }
    }

    /// The key as UTF-8, if it is.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

/// One record, its key, value and header values slices of the batch (or of its decompressed
/// payload): decoding copies nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    pub attributes: i8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<RecordHeader>,
}

impl Record {
    /// The record's offset in a batch with this header.
    pub fn offset(&self, header: &BatchHeader) -> i64 {
        header
            .base_offset
            .wrapping_add(i64::from(self.offset_delta))
    }

    /// The record's timestamp as Kafka reports it: the batch's max timestamp for LogAppendTime
    /// batches, else `base_timestamp + timestamp_delta` (wrapping, like Java).
    pub fn timestamp(&self, header: &BatchHeader) -> i64 {
        match header.timestamp_type() {
            TimestampType::LogAppendTime => header.max_timestamp,
            TimestampType::CreateTime => header.base_timestamp.wrapping_add(self.timestamp_delta),
        }
    }

    /// The record's sequence: `base_sequence + offset_delta` with Kafka's wrap-around, or -1.
    pub fn sequence(&self, header: &BatchHeader) -> i32 {
        if header.base_sequence < 0 {
            return crate::NO_SEQUENCE;
        }
        crate::increment_sequence(header.base_sequence, self.offset_delta)
    }

    /// Encoded size, length prefix included.
    pub fn encoded_len(&self) -> Result<usize, RecordsError> {
        let body = body_len(
            self.offset_delta,
            self.timestamp_delta,
            self.key.as_deref(),
            self.value.as_deref(),
            &self.headers,
        )?;
        Ok(body_prefix_len(body)? + body)
    }

    /// Appends the encoded record to `out` with its own deltas.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), RecordsError> {
        encode_record(
            out,
            self.offset_delta,
            self.timestamp_delta,
            self.key.as_deref(),
            self.value.as_deref(),
            &self.headers,
        )
    }
}

fn field_len(len: Option<usize>) -> Result<usize, RecordsError> {
    match len {
        None => Ok(1),
        Some(n) => {
            let n32 = i32::try_from(n).map_err(|_| too_big(n))?;
            Ok(varint::varint_len(n32) + n)
        }
    }
}

fn too_big(n: usize) -> RecordsError {
    RecordsError::InvalidArgument(format!(
        "a record field of {n} bytes does not fit in a batch"
    ))
}

/// Kafka's `sizeOfBodyInBytes`: the record's bytes after its length prefix.
fn body_len(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[RecordHeader],
) -> Result<usize, RecordsError> {
    let mut size = 1 + varint::varint_len(offset_delta) + varint::varlong_len(timestamp_delta);
    size += field_len(key.map(<[u8]>::len))?;
    size += field_len(value.map(<[u8]>::len))?;
    let count = i32::try_from(headers.len()).map_err(|_| too_big(headers.len()))?;
    size += varint::varint_len(count);
    for h in headers {
        size += field_len(Some(h.key.len()))?;
        size += field_len(h.value.as_ref().map(Bytes::len))?;
    }
    if size > i32::MAX as usize {
        return Err(too_big(size));
    }
    Ok(size)
}

fn body_prefix_len(body: usize) -> Result<usize, RecordsError> {
    Ok(varint::varint_len(
        i32::try_from(body).map_err(|_| too_big(body))?,
    ))
}

fn write_field(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => varint::write_varint(out, -1),
        Some(b) => {
            // Lengths were checked against i32 by body_len.
            varint::write_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Appends one record (Kafka's `DefaultRecord.writeTo`; attributes are always 0). Returns an
/// error only when a field is too large for a batch.
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[RecordHeader],
) -> Result<(), RecordsError> {
    let body = body_len(offset_delta, timestamp_delta, key, value, headers)?;
    out.reserve(body + 5);
    varint::write_varint(out, body as i32);
    out.push(0);
    varint::write_varlong(out, timestamp_delta);
    varint::write_varint(out, offset_delta);
    write_field(out, key);
    write_field(out, value);
    varint::write_varint(out, headers.len() as i32);
    for h in headers {
        write_field(out, Some(&h.key));
        write_field(out, h.value.as_deref());
    }
    Ok(())
}

fn malformed(index: usize, reason: impl Into<String>) -> RecordsError {
    RecordsError::MalformedRecord {
        index,
        reason: reason.into(),
    }
}

/// Reads one record at `*pos` of `data`, as Kafka's `DefaultRecord.readFrom(ByteBuffer)` does
/// (and with its messages), advancing `*pos` past it. Negative key, value and header value
/// lengths are null, as in Kafka; everything is bounds-checked against the bytes present.
pub(crate) fn decode_record(
    data: &Bytes,
    pos: &mut usize,
    index: usize,
    count: i32,
) -> Result<Record, RecordsError> {
    let body_size = match varint::read_varint(data, pos) {
        Ok(n) => n,
        Err(VarintError::Eof) => return Err(RecordsError::MissingRecords { index, count }),
        Err(VarintError::TooLong) => {
            return Err(malformed(index, "Found invalid record structure"))
        }
    };
    let remaining = data.len().saturating_sub(*pos);
    let Ok(body_len) = usize::try_from(body_size) else {
        return Err(malformed(
            index,
            format!("Invalid record size: {body_size}"),
        ));
    };
    if remaining < body_len {
        return Err(malformed(
            index,
            format!("Invalid record size: expected {body_len} bytes in record payload, but instead the buffer has only {remaining} remaining bytes."),
        ));
    }
    let start = *pos;
    let end = start + body_len;
    let body = data.slice(start..end);
    let mut p = 0usize;
    let structure = |_| malformed(index, "Found invalid record structure");
    let attributes = i8::from_be_bytes([*body.first().ok_or_else(|| structure(()))?]);
    p += 1;
    let timestamp_delta = varint::read_varlong(&body, &mut p).map_err(|_| structure(()))?;
    let offset_delta = varint::read_varint(&body, &mut p).map_err(|_| structure(()))?;
    let key = read_nullable(&body, &mut p).ok_or_else(|| structure(()))?;
    let value = read_nullable(&body, &mut p).ok_or_else(|| structure(()))?;
    let headers = read_headers(&body, &mut p, index)?;
    if p != body_len {
        return Err(malformed(
            index,
            format!("Invalid record size: expected to read {body_len} bytes in record payload, but instead read {p}"),
        ));
    }
    *pos = end;
    Ok(Record {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

/// The record's header count and headers, at `*p` of its `body`.
#[inline]
fn read_headers(
    body: &Bytes,
    p: &mut usize,
    index: usize,
) -> Result<Vec<RecordHeader>, RecordsError> {
    let structure = || malformed(index, "Found invalid record structure");
    let header_count = varint::read_varint(body, p).map_err(|_| structure())?;
    if header_count < 0 {
        return Err(malformed(
            index,
            format!("Found invalid number of record headers {header_count}"),
        ));
    }
    let header_count = header_count as usize;
    if header_count > body.len() - *p {
        return Err(malformed(
            index,
            format!("Found invalid number of record headers. {header_count} is larger than the remaining size of the buffer"),
        ));
    }
    // Bounded by the bytes left in the record, each header taking at least two.
    let mut headers = Vec::with_capacity(header_count);
    for _ in 0..header_count {
        let key_len = varint::read_varint(body, p).map_err(|_| structure())?;
        if key_len < 0 {
            return Err(malformed(
                index,
                format!("Invalid negative header key size {key_len}"),
            ));
        }
        let key = take(body, p, key_len as usize).ok_or_else(structure)?;
        let value = read_nullable(body, p).ok_or_else(structure)?;
        headers.push(RecordHeader { key, value });
    }
    Ok(headers)
}

fn take(body: &Bytes, p: &mut usize, len: usize) -> Option<Bytes> {
    let end = p.checked_add(len).filter(|&e| e <= body.len())?;
    let b = body.slice(*p..end);
    *p = end;
    Some(b)
}

/// A length-prefixed nullable field: `None` on malformed input, `Some(None)` for null.
fn read_nullable(body: &Bytes, p: &mut usize) -> Option<Option<Bytes>> {
    let len = varint::read_varint(body, p).ok()?;
    if len < 0 {
        return Some(None);
    }
    take(body, p, len as usize).map(Some)
}

/// Iterates over the records of one batch, reading each from the (decompressed) payload.
/// Ends with an error, after which it yields nothing, when a record is malformed, when the
/// payload holds fewer records than the count, or when bytes remain after the last one.
#[derive(Debug, Clone)]
pub struct RecordIter {
    data: Bytes,
    pos: usize,
    count: i32,
    index: usize,
    done: bool,
}

impl RecordIter {
    /// Iterates over `count` records encoded in `data` (uncompressed).
    pub fn new(data: Bytes, count: i32) -> Result<RecordIter, RecordsError> {
        if count < 0 {
            return Err(RecordsError::InvalidRecordCount(count));
        }
        Ok(RecordIter {
            data,
            pos: 0,
            count,
            index: 0,
            done: false,
        })
    }

    /// The uncompressed record bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }
}

impl Iterator for RecordIter {
    type Item = Result<Record, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.index as u64 >= self.count as u64 {
            self.done = true;
            if self.pos != self.data.len() {
                return Some(Err(RecordsError::TrailingBytes));
            }
            return None;
        }
        let result = decode_record(&self.data, &mut self.pos, self.index, self.count);
        self.index += 1;
        if result.is_err() {
            self.done = true;
        } else if self.index as u64 == self.count as u64 && self.pos != self.data.len() {
            // Kafka checks for leftover bytes as it reads the last record.
            self.done = true;
            return Some(Err(RecordsError::TrailingBytes));
        }
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        // Each record takes at least 7 bytes; the count alone is not trusted.
        let left = (self.count as usize).saturating_sub(self.index);
        let fit = (self.data.len() - self.pos.min(self.data.len())) / 7 + 1;
        (0, Some(left.min(fit)))
    }
}

impl std::iter::FusedIterator for RecordIter {}

/// One whole batch: its header and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    header: BatchHeader,
    bytes: Bytes,
}

impl RecordBatch {
    /// Takes `bytes` as exactly one batch: magic 2, a length field of at least 49 and matching
    /// `bytes.len()`. The CRC is not checked (see [`RecordBatch::verify_crc`]).
    pub fn parse(bytes: Bytes) -> Result<RecordBatch, RecordsError> {
        let header = BatchHeader::parse(&bytes)?;
        if header.batch_length < crate::MIN_BATCH_LENGTH {
            return Err(RecordsError::InvalidBatchLength {
                position: 0,
                length: header.batch_length,
                min: crate::MIN_BATCH_LENGTH,
            });
        }
        match header.size() {
            Some(size) if size == bytes.len() => Ok(RecordBatch { header, bytes }),
            Some(size) if size > bytes.len() => Err(RecordsError::Truncated {
                position: 0,
                needed: size,
                available: bytes.len(),
            }),
            _ => Err(RecordsError::InvalidArgument(format!(
                "the batch length {} says {} bytes but {} were given",
                header.batch_length,
                header.total_size(),
                bytes.len()
            ))),
        }
    }

    /// A batch from the splitter's output (no checks repeated).
    pub fn from_parts(header: BatchHeader, bytes: Bytes) -> RecordBatch {
        RecordBatch { header, bytes }
    }

    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The bytes after the header: the records, compressed or not.
    pub fn payload(&self) -> Bytes {
        self.bytes.slice(HEADER_LEN.min(self.bytes.len())..)
    }

    pub fn compute_crc(&self) -> u32 {
        crate::compute_crc(&self.bytes).unwrap_or(0)
    }

    pub fn is_crc_valid(&self) -> bool {
        crate::crc_is_valid(&self.bytes)
    }

    pub fn verify_crc(&self) -> Result<(), RecordsError> {
        crate::verify_crc(&self.bytes)
    }

    /// The uncompressed record bytes: the payload itself when uncompressed (no copy), else its
    /// decompression, at most `max_uncompressed` bytes.
    pub fn uncompressed_payload(&self, max_uncompressed: usize) -> Result<Bytes, RecordsError> {
        match self.header.compression()? {
            Compression::None => Ok(self.payload()),
            codec => {
                compression::decompress(codec, &self.payload(), max_uncompressed).map(Bytes::from)
            }
        }
    }

    /// The records, decompressing first when needed (output bounded by `max_uncompressed`).
    pub fn records(&self, max_uncompressed: usize) -> Result<RecordIter, RecordsError> {
        if self.header.record_count < 0 {
            return Err(RecordsError::InvalidRecordCount(self.header.record_count));
        }
        RecordIter::new(
            self.uncompressed_payload(max_uncompressed)?,
            self.header.record_count,
        )
    }

    /// All records, or the first error. The vector grows with the records read, never from the
    /// count in the header.
    pub fn decode_records(&self, max_uncompressed: usize) -> Result<Vec<Record>, RecordsError> {
        self.records(max_uncompressed)?.collect()
    }
}
