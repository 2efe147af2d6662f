//! The topics of a consumer's subscription, read from its classic-protocol metadata (Kafka's
//! `ConsumerProtocolSubscription`, as `ClassicGroup.computeSubscribedTopics` reads it).
use std::collections::BTreeSet;

/// The topic names of a `ConsumerProtocolSubscription`, read in full as Kafka's
/// `ConsumerProtocol.deserializeConsumerProtocolSubscription` reads it: its version (an int16,
/// not negative; a version past 3 is read as 3), the topics (an int32 count, each an int16
/// length and UTF-8), the user data (nullable bytes), from version 1 the owned partitions (each
/// a topic and an int32 array), from 2 the generation (int32), from 3 the rack (a nullable
/// string); bytes after them are ignored. `None` where the bytes are not one (Kafka's
/// SchemaException, after which the group's subscription is unknown).
pub(crate) fn subscription_topics(metadata: &[u8]) -> Option<BTreeSet<String>> {
    let mut r = Reader(metadata);
    let version = r.i16()?;
    if version < 0 {
        return None;
    }
    let mut topics = BTreeSet::new();
    for _ in 0..r.count(2)? {
        topics.insert(r.string()?.to_owned());
    }
    r.nullable(4)?;
    if version >= 1 {
        for _ in 0..r.count(6)? {
            r.string()?;
            let partitions = r.count(4)?;
            r.take(partitions * 4)?;
        }
    }
    if version >= 2 {
        r.take(4)?;
    }
    if version >= 3 {
        r.nullable(2)?;
    }
    Some(topics)
}

/// Reads Kafka's non-flexible types from the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes, if there are as many.
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }

    /// An array's length, whose entries take `min` bytes each at least: a negative one, or one
    /// past what is left, is no array.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n <= self.0.len() / min).then_some(n)
    }

    fn string(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.i16()?).ok()?;
        std::str::from_utf8(self.take(len)?).ok()
    }

    /// Nullable bytes (`len_size` 4) or a nullable string (2): length -1 is null.
    fn nullable(&mut self, len_size: usize) -> Option<()> {
        let len = if len_size == 2 {
            i32::from(self.i16()?)
        } else {
            self.i32()?
        };
        if len != -1 {
            self.take(usize::try_from(len).ok()?)?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subscription as Kafka's `ConsumerProtocol.serializeSubscription` writes it (version 3:
    /// topics, user data, owned partitions, generation, rack).
    fn v3(topics: &[&str]) -> Vec<u8> {
        let mut b = 3i16.to_be_bytes().to_vec();
        b.extend((topics.len() as i32).to_be_bytes());
        for t in topics {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
        }
        b.extend((-1i32).to_be_bytes()); // no user data
        b.extend(0i32.to_be_bytes()); // no owned partitions
        b.extend((-1i32).to_be_bytes()); // generation
        b.extend((-1i16).to_be_bytes()); // no rack
        b
    }

    #[test]
    fn reads_the_topics_of_every_version_and_refuses_what_is_not_a_subscription() {
        let topics = subscription_topics(&v3(&["b", "a"])).unwrap();
        assert_eq!(topics.into_iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(subscription_topics(&v3(&[])), Some(BTreeSet::new()));
        let mut v0 = 0i16.to_be_bytes().to_vec();
        v0.extend(1i32.to_be_bytes());
        v0.extend(1i16.to_be_bytes());
        v0.push(b't');
        v0.extend(2i32.to_be_bytes()); // user data
        v0.extend(b"ud");
        assert_eq!(subscription_topics(&v0).unwrap().len(), 1);
        let mut v1 = v0.clone();
        v1[1] = 1;
        assert_eq!(
            subscription_topics(&v1),
            None,
            "v1 needs its owned partitions"
        );
        assert_eq!(subscription_topics(b"m"), None);
        assert_eq!(subscription_topics(&(-1i16).to_be_bytes()), None);
        let mut huge = 0i16.to_be_bytes().to_vec();
        huge.extend(i32::MAX.to_be_bytes());
        assert_eq!(subscription_topics(&huge), None);
        assert_eq!(subscription_topics(&v0[..v0.len() - 1]), None);
    }
}
