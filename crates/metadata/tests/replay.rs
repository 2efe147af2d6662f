//! Replaying the log of any record sequence into a fresh state gives the live state.
use kcoord_metadata::{Record, Store};
use kcoord_wire::records as r;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const GROUPS: &[&str] = &["g1", "g2", "g3"];
const MEMBERS: &[&str] = &["m1", "m2", "m3", "m4"];

fn pick<'a, R: Rng>(rng: &mut R, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

/// A random but applicable record: partitions and removals name topics that exist.
fn random_record<R: Rng>(rng: &mut R, store: &Store) -> Record {
    let topic_ids: Vec<uuid::Uuid> = store.state().topics.iter().map(|t| t.id).collect();
    let group = pick(rng, GROUPS).to_string();
    let member = pick(rng, MEMBERS).to_string();
    let tombstone = rng.random_ratio(1, 5);
    macro_rules! keyed {
        ($variant:ident, $key:expr, $val:ty) => {{
            let v = <$val>::arbitrary(rng, 0);
            Record::$variant($key, if tombstone { None } else { Some(v) })
        }};
    }
    let group_key = |g: &str| g.to_string();
    match rng.random_range(0..11) {
        0 => {
            let mut t = r::TopicRecord::arbitrary(rng, 0);
            t.topic_id = uuid::Uuid::from_u128(rng.random_range(1..6));
            t.name = format!("topic-{}", t.topic_id.as_u128());
            Record::Topic(t)
        }
        1 if !topic_ids.is_empty() => {
            let mut p = r::PartitionRecord::arbitrary(rng, 2);
            p.topic_id = topic_ids[rng.random_range(0..topic_ids.len())];
            Record::Partition(p)
        }
        2 if !topic_ids.is_empty() => Record::RemoveTopic(r::RemoveTopicRecord { topic_id: topic_ids[rng.random_range(0..topic_ids.len())], ..Default::default() }),
        3 => keyed!(OffsetCommit, r::OffsetCommitKey { group: group_key(&group), topic: "t".into(), partition: rng.random_range(0..3), ..Default::default() }, r::OffsetCommitValue),
        4 => keyed!(StreamsGroupMetadata, r::StreamsGroupMetadataKey { group_id: group, ..Default::default() }, r::StreamsGroupMetadataValue),
        5 => keyed!(StreamsGroupMemberMetadata, r::StreamsGroupMemberMetadataKey { group_id: group, member_id: member, ..Default::default() }, r::StreamsGroupMemberMetadataValue),
        6 => keyed!(StreamsGroupTargetAssignmentMetadata, r::StreamsGroupTargetAssignmentMetadataKey { group_id: group, ..Default::default() }, r::StreamsGroupTargetAssignmentMetadataValue),
        7 => keyed!(StreamsGroupTargetAssignmentMember, r::StreamsGroupTargetAssignmentMemberKey { group_id: group, member_id: member, ..Default::default() }, r::StreamsGroupTargetAssignmentMemberValue),
        8 => keyed!(StreamsGroupCurrentMemberAssignment, r::StreamsGroupCurrentMemberAssignmentKey { group_id: group, member_id: member, ..Default::default() }, r::StreamsGroupCurrentMemberAssignmentValue),
        9 => keyed!(StreamsGroupTopology, r::StreamsGroupTopologyKey { group_id: group, ..Default::default() }, r::StreamsGroupTopologyValue),
        _ => {
            let mut c = r::ConfigRecord::arbitrary(rng, 0);
            c.resource_type = 2;
            c.resource_name = format!("topic-{}", rng.random_range(1..6));
            Record::Config(c)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn replaying_the_log_rebuilds_the_live_state(seed in any::<u64>(), records in 1usize..120) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut store = Store::new();
        for _ in 0..records {
            let record = random_record(&mut rng, &store);
            if let Err(e) = store.append(vec![record.clone()]) {
                prop_assert!(false, "a generated record did not apply: {e}: {record:?}");
            }
        }
        let replayed = Store::replay_log(store.log()).expect("the log replays");
        prop_assert_eq!(replayed.state(), store.state());
    }
}
