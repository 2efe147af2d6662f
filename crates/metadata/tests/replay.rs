//! Replaying the log of any record sequence into a fresh state gives the live state.
use kcoord_metadata::{MetadataVersion, Record, RecordAndVersion, Store};
use kcoord_wire::records as r;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const GROUPS: &[&str] = &["g1", "g2", "g3"];
const MEMBERS: &[&str] = &["m1", "m2", "m3", "m4"];

fn pick<'a, R: Rng>(rng: &mut R, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

/// A random but applicable broker or feature record, at a random version of its schema:
/// changes name a registered broker with its epoch, directories are random (so never another
/// broker's), fencing values are the ones Kafka defines.
fn random_broker_record<R: Rng>(rng: &mut R, store: &Store) -> RecordAndVersion {
    let registered: Vec<(i32, i64)> = store
        .state()
        .brokers
        .iter()
        .map(|b| (b.id, b.epoch))
        .collect();
    let pick_broker = |rng: &mut R| registered[rng.random_range(0..registered.len())];
    match rng.random_range(0..7) {
        0 if !registered.is_empty() => {
            let (broker_id, broker_epoch) = pick_broker(rng);
            Record::UnregisterBroker(r::UnregisterBrokerRecord {
                broker_id,
                broker_epoch,
                ..Default::default()
            })
            .at_version(0)
        }
        1 if !registered.is_empty() => {
            let (id, epoch) = pick_broker(rng);
            Record::FenceBroker(r::FenceBrokerRecord {
                id,
                epoch,
                ..Default::default()
            })
            .at_version(0)
        }
        2 if !registered.is_empty() => {
            let (id, epoch) = pick_broker(rng);
            Record::UnfenceBroker(r::UnfenceBrokerRecord {
                id,
                epoch,
                ..Default::default()
            })
            .at_version(0)
        }
        3 if !registered.is_empty() => {
            let version = rng.random_range(0..=3);
            let mut change = r::BrokerRegistrationChangeRecord::arbitrary(rng, version);
            (change.broker_id, change.broker_epoch) = pick_broker(rng);
            change.fenced = rng.random_range(-1..=1);
            change.in_controlled_shutdown = if version >= 1 {
                rng.random_range(0..=1)
            } else {
                0
            };
            Record::BrokerRegistrationChange(change).at_version(version)
        }
        4 => {
            let (name, level) = match rng.random_range(0..3) {
                0 => (
                    "metadata.version",
                    rng.random_range(
                        MetadataVersion::MINIMUM.feature_level()
                            ..=MetadataVersion::LATEST.feature_level(),
                    ),
                ),
                1 => ("group.version", rng.random_range(0..=1)),
                _ => ("streams.version", rng.random_range(0..=1)),
            };
            Record::FeatureLevel(r::FeatureLevelRecord {
                name: name.into(),
                feature_level: level,
                ..Default::default()
            })
            .at_version(0)
        }
        _ => {
            let version = rng.random_range(0..=5);
            let mut register = r::RegisterBrokerRecord::arbitrary(rng, version);
            register.broker_id = rng.random_range(1..5);
            Record::RegisterBroker(register).at_version(version)
        }
    }
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
            // A topic id (and name) not in use: the controller never reuses a live one, and
            // replay refuses it.
            let free: Vec<u128> = (1..6)
                .filter(|i| !topic_ids.contains(&uuid::Uuid::from_u128(*i)))
                .collect();
            match free.get(rng.random_range(0..free.len().max(1))) {
                Some(id) => {
                    let mut t = r::TopicRecord::arbitrary(rng, 0);
                    t.topic_id = uuid::Uuid::from_u128(*id);
                    t.name = format!("topic-{id}");
                    Record::Topic(t)
                }
                None => Record::RemoveTopic(r::RemoveTopicRecord {
                    topic_id: topic_ids[rng.random_range(0..topic_ids.len())],
                    ..Default::default()
                }),
            }
        }
        1 if !topic_ids.is_empty() => {
            let mut p = r::PartitionRecord::arbitrary(rng, 2);
            p.topic_id = topic_ids[rng.random_range(0..topic_ids.len())];
            Record::Partition(p)
        }
        2 if !topic_ids.is_empty() => Record::RemoveTopic(r::RemoveTopicRecord {
            topic_id: topic_ids[rng.random_range(0..topic_ids.len())],
            ..Default::default()
        }),
        3 => keyed!(
            OffsetCommit,
            r::OffsetCommitKey {
                group: group_key(&group),
                topic: "t".into(),
                partition: rng.random_range(0..3),
                ..Default::default()
            },
            r::OffsetCommitValue
        ),
        4 => keyed!(
            StreamsGroupMetadata,
            r::StreamsGroupMetadataKey {
                group_id: group,
                ..Default::default()
            },
            r::StreamsGroupMetadataValue
        ),
        5 => keyed!(
            StreamsGroupMemberMetadata,
            r::StreamsGroupMemberMetadataKey {
                group_id: group,
                member_id: member,
                ..Default::default()
            },
            r::StreamsGroupMemberMetadataValue
        ),
        6 => keyed!(
            StreamsGroupTargetAssignmentMetadata,
            r::StreamsGroupTargetAssignmentMetadataKey {
                group_id: group,
                ..Default::default()
            },
            r::StreamsGroupTargetAssignmentMetadataValue
        ),
        7 => keyed!(
            StreamsGroupTargetAssignmentMember,
            r::StreamsGroupTargetAssignmentMemberKey {
                group_id: group,
                member_id: member,
                ..Default::default()
            },
            r::StreamsGroupTargetAssignmentMemberValue
        ),
        8 => keyed!(
            StreamsGroupCurrentMemberAssignment,
            r::StreamsGroupCurrentMemberAssignmentKey {
                group_id: group,
                member_id: member,
                ..Default::default()
            },
            r::StreamsGroupCurrentMemberAssignmentValue
        ),
        9 => keyed!(
            StreamsGroupTopology,
            r::StreamsGroupTopologyKey {
                group_id: group,
                ..Default::default()
            },
            r::StreamsGroupTopologyValue
        ),
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
            let record = if rng.random_ratio(1, 3) {
                random_broker_record(&mut rng, &store)
            } else {
                random_record(&mut rng, &store).at_latest_version()
            };
            if let Err(e) = store.append_versioned(vec![record.clone()]) {
                prop_assert!(false, "a generated record did not apply: {e}: {record:?}");
            }
        }
        let replayed = Store::replay_log(store.log()).expect("the log replays");
        prop_assert_eq!(replayed.state(), store.state());
    }
}
