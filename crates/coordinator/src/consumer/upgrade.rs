//! A consumer-protocol member joining a classic group that has members: Kafka 4.4 upgrades the
//! group online (`validateOnlineUpgrade`, then `ConsumerGroup.fromClassicGroup`), or refuses
//! with GROUP_ID_NOT_FOUND and a message saying why. kcoord does not upgrade a live group yet
//! (README, "Known gaps"), but refuses as Kafka does for each reason Kafka has, reading the
//! members' embedded consumer protocol (`ConsumerProtocolSubscription`/`Assignment`, v0-3) as
//! Kafka's `ConsumerProtocol` reads it.

use kcoord_wire::ErrorCode;

use crate::classic::ClassicGroup;
use crate::error::CoordinatorError;

/// The highest version of the embedded consumer protocol Kafka 4.4 knows; a higher one is read
/// as this one (`checkSubscriptionVersion`).
const HIGHEST_PROTOCOL_VERSION: i16 = 3;

/// Why `classic` cannot become a consumer group now, in Kafka's words. A group Kafka would
/// upgrade is refused as a group of another type (the upgrade is not done yet).
pub(super) fn refusal(classic: &ClassicGroup, max_size: i32) -> CoordinatorError {
    let gid = classic.group_id.as_str();
    let cannot = |why: &str| {
        CoordinatorError::new(
            ErrorCode::GROUP_ID_NOT_FOUND,
            format!("Cannot upgrade classic group {gid} to consumer group because {why}"),
        )
    };
    if !classic.uses_consumer_protocol() {
        return cannot("the group does not use the consumer embedded protocol.");
    }
    if classic.members.len() > usize::try_from(max_size).unwrap_or(0) {
        return cannot("the group size exceeds the consumer group maximum size.");
    }
    // Before its first join completes a group has no protocol, and Kafka's upgrade fails
    // reading it (an internal error): such a group is refused as of another type.
    let Some(protocol) = classic.protocol_name.as_deref() else {
        return super::not_a_consumer_group(gid);
    };
    for member in classic.members.values() {
        // A member that never synced has an empty assignment, which Kafka accepts as none.
        let assignment = if member.assignment.is_empty() {
            Ok(false)
        } else {
            assignment_has_user_data(&member.assignment)
        };
        let subscription = member
            .metadata(protocol)
            .map_or(Err(Malformed), |m| subscription(m));
        match (assignment, subscription) {
            (Ok(true), _) => {
                return cannot("an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")
            }
            (Err(Malformed), _) | (_, Err(Malformed)) => {
                return cannot("the embedded consumer protocol is malformed.")
            }
            _ => {}
        }
    }
    super::not_a_consumer_group(gid)
}

/// The bytes do not hold what the schema says (Kafka's `SchemaException`).
#[derive(Debug, PartialEq, Eq)]
struct Malformed;

/// Kafka's non-flexible readers over a byte slice: every shortfall or negative length of a
/// non-nullable field is malformed, as Kafka's generated `read` throws.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i16(&mut self) -> Result<i16, Malformed> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().map_err(|_| Malformed)?,
        ))
    }

    fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().map_err(|_| Malformed)?,
        ))
    }

    /// A string; `None` is null (length -1), allowed only where `nullable`. Java decodes bad
    /// UTF-8 with replacement characters, so the text itself is never malformed.
    fn string(&mut self, nullable: bool) -> Result<Option<()>, Malformed> {
        match usize::try_from(self.i16()?) {
            Ok(len) => self.take(len).map(|_| Some(())),
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

    /// Nullable bytes: their length, `None` when null.
    fn bytes(&mut self) -> Result<Option<usize>, Malformed> {
        match usize::try_from(self.i32()?) {
            Ok(len) => self.take(len).map(|b| Some(b.len())),
            Err(_) => Ok(None),
        }
    }

    /// Topic partitions: (topic, [partition]) pairs.
    fn topic_partitions(&mut self) -> Result<(), Malformed> {
        for _ in 0..self.array_len()? {
            self.string(false)?;
            let partitions = self.array_len()?;
            self.take(partitions.checked_mul(4).ok_or(Malformed)?)?;
        }
        Ok(())
    }

    /// The version prefix (`deserializeVersion`, `check*Version`).
    fn version(&mut self) -> Result<i16, Malformed> {
        let v = self.i16()?;
        if v < 0 {
            return Err(Malformed);
        }
        Ok(v.min(HIGHEST_PROTOCOL_VERSION))
    }
}

/// Reads a `ConsumerProtocolSubscription` (Kafka's `deserializeConsumerProtocolSubscription`).
fn subscription(bytes: &[u8]) -> Result<(), Malformed> {
    let mut r = Reader(bytes);
    let version = r.version()?;
    for _ in 0..r.array_len()? {
        r.string(false)?;
    }
    r.bytes()?;
    if version >= 1 {
        r.topic_partitions()?;
    }
    if version >= 2 {
        r.i32()?;
    }
    if version >= 3 {
        r.string(true)?;
    }
    Ok(())
}

/// Reads a `ConsumerProtocolAssignment`; whether it carries user data (which Kafka refuses to
/// drop: "an unsupported custom assignor").
fn assignment_has_user_data(bytes: &[u8]) -> Result<bool, Malformed> {
    let mut r = Reader(bytes);
    r.version()?;
    r.topic_partitions()?;
    Ok(r.bytes()?.is_some_and(|len| len > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subscription_v3(topics: &[&str], rack: Option<&str>) -> Vec<u8> {
        let mut b = vec![0, 3];
        b.extend((topics.len() as i32).to_be_bytes());
        for t in topics {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
        }
        b.extend((-1i32).to_be_bytes()); // no user data
        b.extend(0i32.to_be_bytes()); // owns nothing
        b.extend((-1i32).to_be_bytes()); // generation
        match rack {
            Some(r) => {
                b.extend((r.len() as i16).to_be_bytes());
                b.extend(r.as_bytes());
            }
            None => b.extend((-1i16).to_be_bytes()),
        }
        b
    }

    #[test]
    fn subscriptions_are_read_as_kafka_reads_them() {
        assert_eq!(
            subscription(&subscription_v3(&["a", "b"], Some("r1"))),
            Ok(())
        );
        assert_eq!(subscription(&subscription_v3(&[], None)), Ok(()));
        // v0: topics and user data only; trailing bytes are ignored, as Kafka ignores them.
        assert_eq!(
            subscription(&[0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 9]),
            Ok(())
        );
        // A version above 3 is read as 3.
        let mut v9 = subscription_v3(&["a"], None);
        v9[1] = 9;
        assert_eq!(subscription(&v9), Ok(()));
        assert_eq!(subscription(b""), Err(Malformed));
        assert_eq!(subscription(b"subscription"), Err(Malformed));
        assert_eq!(
            subscription(&[255, 255, 0, 0, 0, 0]),
            Err(Malformed),
            "a negative version"
        );
        let cut = subscription_v3(&["a"], Some("rack"));
        assert_eq!(subscription(&cut[..cut.len() - 1]), Err(Malformed));
    }

    #[test]
    fn assignments_with_user_data_are_told_apart() {
        let mut plain = vec![0, 0];
        plain.extend(1i32.to_be_bytes());
        plain.extend([0, 1, b't']);
        plain.extend(1i32.to_be_bytes());
        plain.extend(7i32.to_be_bytes());
        let mut with_data = plain.clone();
        plain.extend((-1i32).to_be_bytes());
        assert_eq!(assignment_has_user_data(&plain), Ok(false));
        with_data.extend(2i32.to_be_bytes());
        with_data.extend([1, 2]);
        assert_eq!(assignment_has_user_data(&with_data), Ok(true));
        assert_eq!(
            assignment_has_user_data(&[0, 0, 0, 0, 0, 9]),
            Err(Malformed)
        );
    }
}
