//! Splitting concatenated batches without copying.

use bytes::Bytes;

use crate::header::{
    get_i32, BatchHeader, HEADER_LEN, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC, MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
};
use crate::RecordsError;

/// Iterates over the batches in a buffer of concatenated magic 2 batches (a Produce
/// partition's records, a Fetch response's, a segment file's), yielding each header with the
/// batch as a [`Bytes`] slice of the input (no copy).
///
/// Nothing is allocated from a length read off the wire: a batch is only ever a slice of bytes
/// already present. The first problem ends the iteration with one error:
///
/// * [`RecordsError::Truncated`] when the bytes end inside a batch (fewer than 61 bytes, or
///   fewer than the length field says). `position` is where that batch starts, which is also
///   [`BatchSplitter::position`]: the length of the whole batches before it.
/// * [`RecordsError::InvalidBatchLength`] when a length field is below 49 (or negative).
/// * [`RecordsError::UnsupportedMagic`] when a batch's magic is not 2.
///
/// CRCs are not checked here; see [`crate::verify_crc`].
#[derive(Debug, Clone)]
pub struct BatchSplitter {
    buf: Bytes,
    pos: usize,
    done: bool,
}

impl BatchSplitter {
    pub fn new(buf: Bytes) -> BatchSplitter {
        BatchSplitter {
            buf,
            pos: 0,
            done: false,
        }
    }

    /// Bytes consumed so far: after an error, the length of the whole batches before the bad
    /// one.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not yet split.
    pub fn remaining(&self) -> Bytes {
        self.buf.slice(self.pos.min(self.buf.len())..)
    }

    fn next_batch(&mut self) -> Result<Option<(BatchHeader, Bytes)>, RecordsError> {
        let position = self.pos;
        let rest = self.buf.get(position..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(None);
        }
        let truncated = |needed: usize| RecordsError::Truncated {
            position,
            needed,
            available: rest.len(),
        };
        let length = get_i32(rest, LENGTH_OFFSET).ok_or(truncated(LOG_OVERHEAD))?;
        if length < MIN_BATCH_LENGTH {
            return Err(RecordsError::InvalidBatchLength {
                position,
                length,
                min: MIN_BATCH_LENGTH,
            });
        }
        if let Some(&m) = rest.get(MAGIC_OFFSET) {
            let magic = i8::from_be_bytes([m]);
            if magic != MAGIC {
                return Err(RecordsError::UnsupportedMagic { position, magic });
            }
        }
        // length >= 49 > 0, so the conversion holds; the sum cannot overflow usize.
        let size = usize::try_from(length)
            .unwrap_or(usize::MAX)
            .saturating_add(LOG_OVERHEAD);
        if rest.len() < size {
            return Err(truncated(size.max(HEADER_LEN)));
        }
        let header = BatchHeader::parse(rest).map_err(|e| match e {
            RecordsError::UnsupportedMagic { magic, .. } => {
                RecordsError::UnsupportedMagic { position, magic }
            }
            other => other,
        })?;
        let batch = self.buf.slice(position..position + size);
        self.pos = position + size;
        Ok(Some((header, batch)))
    }
}

impl Iterator for BatchSplitter {
    type Item = Result<(BatchHeader, Bytes), RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_batch() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for BatchSplitter {}

/// Splits `buf` into its batches; see [`BatchSplitter`].
pub fn split_batches(buf: Bytes) -> BatchSplitter {
    BatchSplitter::new(buf)
}
