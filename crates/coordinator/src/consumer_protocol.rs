//! Kafka's embedded consumer protocol (`ConsumerProtocolSubscription` and
//! `ConsumerProtocolAssignment`, versions 0-3), the bytes a classic consumer puts in its
//! JoinGroup metadata and a leader in its SyncGroup assignments, read and written as Kafka's
//! `ConsumerProtocol` does. Classic groups read the subscriptions for their topics, the online
//! upgrade and downgrade convert members with them, and the web page shows the assignments.
use std::collections::{BTreeMap, BTreeSet};

use bytes::{BufMut, Bytes, BytesMut};

/// The highest version Kafka 4.4 knows; a higher one is read and written as this one
/// (`checkSubscriptionVersion`, `checkAssignmentVersion`).
pub const HIGHEST_VERSION: i16 = 3;

/// The bytes do not hold what the schema says (Kafka's `SchemaException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed embedded consumer protocol")]
pub struct Malformed;

/// Topic name -> partitions, in the order the bytes list them.
pub type NamedPartitions = Vec<(String, Vec<i32>)>;

/// A `ConsumerProtocolSubscription`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    pub version: i16,
    pub topics: Vec<String>,
    pub user_data: Option<Bytes>,
    /// From version 1.
    pub owned_partitions: NamedPartitions,
    /// From version 2; -1 before.
    pub generation_id: i32,
    /// From version 3.
    pub rack_id: Option<String>,
}

/// A `ConsumerProtocolAssignment`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    pub partitions: NamedPartitions,
    pub user_data: Option<Bytes>,
}

impl Assignment {
    /// Whether it carries user data, which only a custom assignor writes (and which the
    /// online upgrade would lose, so Kafka refuses it).
    pub fn has_user_data(&self) -> bool {
        self.user_data.as_ref().is_some_and(|d| !d.is_empty())
    }
}

/// Kafka's non-flexible readers over a byte slice: every shortfall, or negative length of a
/// non-nullable field, is malformed, as Kafka's generated `read` throws.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i16(&mut self) -> Result<i16, Malformed> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, Malformed> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A string (`None`: null, allowed only where `nullable`). Java decodes bad UTF-8 with
    /// replacement characters, so the text itself is never malformed.
    fn string(&mut self, nullable: bool) -> Result<Option<String>, Malformed> {
        match usize::try_from(self.i16()?) {
            Ok(len) => Ok(Some(String::from_utf8_lossy(self.take(len)?).into_owned())),
            Err(_) if nullable => Ok(None),
            Err(_) => Err(Malformed),
        }
    }

    /// An array's length, bounded by the bytes left as Kafka bounds it.
    fn array_len(&mut self) -> Result<usize, Malformed> {
        let len = usize::try_from(self.i32()?).map_err(|_| Malformed)?;
        if len > self.0.len() {
            return Err(Malformed);
        }
        Ok(len)
    }

    fn nullable_bytes(&mut self) -> Result<Option<Bytes>, Malformed> {
        match usize::try_from(self.i32()?) {
            Ok(len) => Ok(Some(Bytes::copy_from_slice(self.take(len)?))),
            Err(_) => Ok(None),
        }
    }

    fn topic_partitions(&mut self) -> Result<NamedPartitions, Malformed> {
        let mut out = Vec::new();
        for _ in 0..self.array_len()? {
            let topic = self.string(false)?.unwrap_or_default();
            let mut partitions = Vec::new();
            for _ in 0..self.array_len()? {
                partitions.push(self.i32()?);
            }
            out.push((topic, partitions));
        }
        Ok(out)
    }
}

/// Kafka's `deserializeVersion` with the check of the reader that follows: not negative, and
/// a version past [`HIGHEST_VERSION`] is read as it.
pub fn read_version(bytes: &[u8]) -> Result<i16, Malformed> {
    let v = Reader(bytes).i16()?;
    if v < 0 {
        return Err(Malformed);
    }
    Ok(v.min(HIGHEST_VERSION))
}

/// Kafka's `deserializeConsumerProtocolSubscription`; bytes after the fields are ignored.
pub fn read_subscription(bytes: &[u8]) -> Result<Subscription, Malformed> {
    let version = read_version(bytes)?;
    let mut r = Reader(&bytes[2..]);
    let mut s = Subscription {
        version,
        generation_id: -1,
        ..Default::default()
    };
    for _ in 0..r.array_len()? {
        s.topics.push(r.string(false)?.unwrap_or_default());
    }
    s.user_data = r.nullable_bytes()?;
    if version >= 1 {
        s.owned_partitions = r.topic_partitions()?;
    }
    if version >= 2 {
        s.generation_id = r.i32()?;
    }
    if version >= 3 {
        s.rack_id = r.string(true)?;
    }
    Ok(s)
}

/// Kafka's `deserializeConsumerProtocolAssignment`.
pub fn read_assignment(bytes: &[u8]) -> Result<Assignment, Malformed> {
    read_version(bytes)?;
    let mut r = Reader(&bytes[2..]);
    let partitions = r.topic_partitions()?;
    let user_data = r.nullable_bytes()?;
    Ok(Assignment {
        partitions,
        user_data,
    })
}

/// Kafka's `serializeAssignment` of an assignment without user data at `version` (clamped to
/// [`HIGHEST_VERSION`]; every version has the same fields).
pub fn write_assignment(partitions: &BTreeMap<String, BTreeSet<i32>>, version: i16) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(version.clamp(0, HIGHEST_VERSION));
    put_len(&mut b, partitions.len());
    for (topic, parts) in partitions {
        put_string(&mut b, topic);
        put_len(&mut b, parts.len());
        for p in parts {
            b.put_i32(*p);
        }
    }
    b.put_i32(-1);
    b.freeze()
}

fn put_len(b: &mut BytesMut, len: usize) {
    b.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
}

fn put_string(b: &mut BytesMut, s: &str) {
    b.put_i16(i16::try_from(s.len()).unwrap_or(i16::MAX));
    b.put_slice(s.as_bytes());
}

#[cfg(test)]
mod tests;
