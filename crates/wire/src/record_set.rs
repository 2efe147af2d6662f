//! The value of a `records` field (Produce, Fetch): record batches as bytes, never decoded by
//! the codec. Decoding gives one slice of the frame; a Fetch response is built from the
//! stored batches' own bytes, several pieces written out in order, so that serving them copies
//! nothing ([`crate::frame::SharedFrame`]).

use bytes::{Bytes, BytesMut};

#[derive(Debug, Clone)]
pub enum RecordSet {
    One(Bytes),
    /// Pieces in order; their concatenation is the field's value.
    Parts(Vec<Bytes>),
}

impl Default for RecordSet {
    fn default() -> Self {
        RecordSet::One(Bytes::new())
    }
}

impl From<Bytes> for RecordSet {
    fn from(b: Bytes) -> Self {
        RecordSet::One(b)
    }
}

impl From<Vec<Bytes>> for RecordSet {
    fn from(parts: Vec<Bytes>) -> Self {
        RecordSet::Parts(parts)
    }
}

impl RecordSet {
    pub fn parts(&self) -> &[Bytes] {
        match self {
            RecordSet::One(b) => std::slice::from_ref(b),
            RecordSet::Parts(parts) => parts,
        }
    }

    pub fn len(&self) -> usize {
        self.parts().iter().map(Bytes::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.parts().iter().all(Bytes::is_empty)
    }

    /// The value as one buffer (copied only when it is in several pieces).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            RecordSet::One(b) => b.clone(),
            RecordSet::Parts(parts) if parts.len() == 1 => parts[0].clone(),
            RecordSet::Parts(parts) => {
                let mut out = BytesMut::with_capacity(self.len());
                for p in parts {
                    out.extend_from_slice(p);
                }
                out.freeze()
            }
        }
    }
}

/// Equal when the bytes are, however they are split.
impl PartialEq for RecordSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.to_bytes() == other.to_bytes()
    }
}

impl Eq for RecordSet {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_compare_by_content() {
        let one = RecordSet::from(Bytes::from_static(b"abcdef"));
        let parts = RecordSet::from(vec![
            Bytes::from_static(b"abc"),
            Bytes::new(),
            Bytes::from_static(b"def"),
        ]);
        assert_eq!(one, parts);
        assert_eq!(parts.len(), 6);
        assert!(RecordSet::default().is_empty());
        assert_ne!(one, RecordSet::from(Bytes::from_static(b"abcdeg")));
    }
}
