use kcoord_metadata::Store;
use kcoord_wire::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopicConfig,
};
use kcoord_wire::messages::delete_topics_request::DeleteTopicState;
use kcoord_wire::messages::DeleteTopicsRequest;

use super::*;

const NODE: i32 = 7;
const DEFAULTS: TopicDefaults = TopicDefaults {
    node_id: NODE,
    num_partitions: 3,
    replication_factor: 2,
};

const UNLIMITED: TopicLimits = TopicLimits {
    max_topics: usize::MAX,
    max_partitions: usize::MAX,
};

fn topic(name: &str, partitions: i32, replication: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: replication,
        ..Default::default()
    }
}

fn create(
    store: &mut Store,
    topics: Vec<CreatableTopic>,
    validate_only: bool,
) -> Vec<CreatableTopicResult> {
    // Ids never handed out before in this store, as the controller's random ids are.
    let mut next = 100 + 1_000 * u128::from(store.log().next_offset());
    let request = CreateTopicsRequest {
        topics,
        validate_only,
        ..Default::default()
    };
    let decision = create_topics(
        &store.state().topics,
        &DEFAULTS,
        &UNLIMITED,
        &request,
        || {
            next += 1;
            Uuid::from_u128(next)
        },
    );
    store.append(decision.records).unwrap();
    decision.results
}

fn codes(results: &[CreatableTopicResult]) -> Vec<(&str, i16, Option<&str>)> {
    results
        .iter()
        .map(|r| (r.name.as_str(), r.error_code, r.error_message.as_deref()))
        .collect()
}

#[test]
fn creates_topics_with_defaults_configs_and_this_node_as_leader() {
    let mut store = Store::new();
    let mut t = topic("orders", -1, -1);
    t.configs = vec![
        CreatableTopicConfig {
            name: "retention.ms".into(),
            value: Some("1000".into()),
            ..Default::default()
        },
        CreatableTopicConfig {
            name: "cleanup.policy".into(),
            value: Some("compact".into()),
            ..Default::default()
        },
    ];
    let results = create(&mut store, vec![t, topic("payments", 2, 5)], false);
    assert_eq!(
        codes(&results),
        vec![("orders", 0, None), ("payments", 0, None)]
    );
    assert_eq!(
        (results[0].num_partitions, results[0].replication_factor),
        (3, 2)
    );
    assert_eq!(
        (results[1].num_partitions, results[1].replication_factor),
        (2, 5)
    );
    assert_eq!(results[0].topic_id, Uuid::from_u128(101));
    // The effective configs are the CreateTopics handler's to list.
    assert!(results[0].configs.is_none());

    let image = &store.state().topics;
    let orders = image.get("orders").unwrap();
    assert_eq!(orders.partition_count(), 3);
    assert_eq!(orders.replication_factor(), 2);
    assert_eq!(
        orders.configs.get("cleanup.policy").map(String::as_str),
        Some("compact")
    );
    let p = &orders.partitions[&0];
    assert_eq!(
        (p.leader, p.leader_epoch, p.replicas.clone(), p.isr.clone()),
        (NODE, 0, vec![NODE], vec![NODE])
    );
    assert_eq!(image.get("payments").unwrap().replication_factor(), 5);
    // TopicRecord, then ConfigRecords, then PartitionRecords.
    let types: Vec<i16> = store
        .log()
        .records()
        .iter()
        .map(|r| r.record_type)
        .collect();
    assert_eq!(types, vec![2, 4, 4, 3, 3, 3, 2, 3, 3]);
}

#[test]
fn validate_only_answers_without_records() {
    let mut store = Store::new();
    let results = create(&mut store, vec![topic("orders", 1, 1)], true);
    assert_eq!(codes(&results), vec![("orders", 0, None)]);
    assert!(store.log().is_empty());
}

#[test]
fn per_topic_errors_with_kafka_messages() {
    let mut store = Store::new();
    create(
        &mut store,
        vec![topic("exists", 1, 1), topic("a_b", 1, 1)],
        false,
    );
    let mut null_config = topic("nullcfg", 1, 1);
    null_config.configs = vec![
        CreatableTopicConfig {
            name: "x".into(),
            value: None,
            ..Default::default()
        },
        CreatableTopicConfig {
            name: "y".into(),
            value: None,
            ..Default::default()
        },
    ];
    let config = |name: &str, key: &str, value: &str| {
        let mut t = topic(name, 1, 1);
        t.configs = vec![CreatableTopicConfig {
            name: key.into(),
            value: Some(value.into()),
            ..Default::default()
        }];
        t
    };
    let results = create(
        &mut store,
        vec![
            config("unknown-cfg", "retention.mss", "1"),
            config("bad-cfg", "segment.bytes", "10"),
            topic("exists", 1, 1),
            topic("bad name", 1, 1),
            topic("a.b", 1, 1),
            null_config,
            topic("zero-rf", 1, 0),
            topic("neg-rf", 1, -2),
            topic("zero-parts", 0, 1),
            topic("neg-parts", -5, 1),
            topic("dup", 1, 1),
            topic("ok", 1, 1),
            topic("dup", 2, 1),
            topic("__cluster_metadata", 1, 1),
        ],
        false,
    );
    assert_eq!(
        codes(&results),
        vec![
            ("unknown-cfg", 40, Some("Unknown topic config name: retention.mss")),
            ("bad-cfg", 40, Some("Invalid value 10 for configuration segment.bytes: Value must be at least 1048576")),
            ("exists", 36, Some("Topic 'exists' already exists.")),
            ("bad name", 17, Some("Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")),
            ("a.b", 17, Some("Topic 'a.b' collides with existing topic: a_b")),
            ("nullcfg", 40, Some("Null value not supported for topic configs: x,y")),
            ("zero-rf", 38, Some("Replication factor must be larger than 0, or -1 to use the default value.")),
            ("neg-rf", 38, Some("Replication factor must be larger than 0, or -1 to use the default value.")),
            ("zero-parts", 37, Some("Number of partitions was set to an invalid non-positive value.")),
            ("neg-parts", 37, Some("Number of partitions was set to an invalid non-positive value.")),
            ("ok", 0, None),
            ("dup", 42, Some("Duplicate topic name.")),
            ("__cluster_metadata", 42, Some("Creation of internal topic __cluster_metadata is prohibited.")),
        ]
    );
    assert!(store.state().topics.get("ok").is_some());
    assert!(store.state().topics.get("dup").is_none());
    assert_eq!(store.state().topics.len(), 3);
}

#[test]
fn too_many_partitions_fail_the_whole_request() {
    let mut store = Store::new();
    let results = create(
        &mut store,
        vec![topic("a", 6000, 1), topic("b", 5000, 1), topic("c", 1, 1)],
        false,
    );
    assert_eq!(results.len(), 3);
    assert!(results
        .iter()
        .all(|r| r.error_code == ErrorCode::POLICY_VIOLATION.code()
            && r.error_message.as_deref()
                == Some("Excessively large number of partitions per request.")));
    assert!(store.log().is_empty());
    // Duplicates are left out of the count (they are refused anyway).
    let results = create(
        &mut store,
        vec![topic("a", 6000, 1), topic("b", 5000, 1), topic("b", 1, 1)],
        false,
    );
    assert_eq!(
        codes(&results),
        vec![("a", 0, None), ("b", 42, Some("Duplicate topic name."))]
    );
    // One huge topic alone is refused the same way.
    let results = create(&mut store, vec![topic("huge", i32::MAX, 1)], false);
    assert_eq!(results[0].error_code, ErrorCode::POLICY_VIOLATION.code());
}

#[test]
fn manual_assignments_may_only_name_this_node() {
    let mut store = Store::new();
    let assign = |partitions: &[(i32, &[i32])]| -> Vec<CreatableReplicaAssignment> {
        partitions
            .iter()
            .map(|(p, b)| CreatableReplicaAssignment {
                partition_index: *p,
                broker_ids: b.to_vec(),
                ..Default::default()
            })
            .collect()
    };
    let with =
        |name: &str, rf: i16, parts: i32, a: Vec<CreatableReplicaAssignment>| CreatableTopic {
            name: name.into(),
            num_partitions: parts,
            replication_factor: rf,
            assignments: a,
            ..Default::default()
        };
    let results = create(
        &mut store,
        vec![
            with("good", -1, -1, assign(&[(0, &[NODE]), (1, &[NODE])])),
            with("rf-set", 1, -1, assign(&[(0, &[NODE])])),
            with("parts-set", -1, 1, assign(&[(0, &[NODE])])),
            with("other-broker", -1, -1, assign(&[(0, &[99])])),
            with("twice", -1, -1, assign(&[(0, &[NODE, NODE])])),
            with("gap", -1, -1, assign(&[(0, &[NODE]), (2, &[NODE])])),
            with("repeat", -1, -1, assign(&[(0, &[NODE]), (0, &[NODE])])),
            with("empty", -1, -1, assign(&[(0, &[])])),
        ],
        false,
    );
    assert_eq!(
        codes(&results),
        vec![
            ("good", 0, None),
            ("rf-set", 42, Some("A manual partition assignment was specified, but replication factor was not set to -1.")),
            ("parts-set", 42, Some("A manual partition assignment was specified, but numPartitions was not set to -1.")),
            ("other-broker", 39, Some("The manual partition assignment includes broker 99, but no such broker is registered.")),
            ("twice", 39, Some("The manual partition assignment includes the broker 7 more than once.")),
            ("gap", 39, Some("partitions should be a consecutive 0-based integer sequence")),
            ("repeat", 39, Some("Found multiple manual partition assignments for partition 0")),
            ("empty", 39, Some("The manual partition assignment includes an empty replica list.")),
        ]
    );
    assert_eq!(
        (results[0].num_partitions, results[0].replication_factor),
        (2, 1)
    );
}

fn delete(
    store: &mut Store,
    request: DeleteTopicsRequest,
) -> Vec<(Option<String>, Uuid, i16, Option<String>)> {
    let decision = delete_topics(&store.state().topics, &request);
    store.append(decision.records).unwrap();
    decision
        .results
        .into_iter()
        .map(|r| (r.name, r.topic_id, r.error_code, r.error_message))
        .collect()
}

#[test]
fn deletes_by_name_and_by_id() {
    let mut store = Store::new();
    create(
        &mut store,
        vec![topic("a", 1, 1), topic("b", 1, 1), topic("c", 1, 1)],
        false,
    );
    let id = |n: &str, s: &Store| s.state().topics.get(n).unwrap().id;
    let b = id("b", &store);
    let got = delete(
        &mut store,
        DeleteTopicsRequest {
            topic_names: vec!["a".into(), "zz".into()],
            ..Default::default()
        },
    );
    assert_eq!(
        got,
        vec![
            (
                Some("zz".into()),
                Uuid::nil(),
                3,
                Some("This server does not host this topic-partition.".into())
            ),
            (Some("a".into()), Uuid::from_u128(101), 0, None),
        ]
    );
    let ghost = Uuid::from_u128(999);
    let got = delete(
        &mut store,
        DeleteTopicsRequest {
            topics: vec![
                DeleteTopicState {
                    name: None,
                    topic_id: b,
                    ..Default::default()
                },
                DeleteTopicState {
                    name: None,
                    topic_id: ghost,
                    ..Default::default()
                },
            ],
            ..Default::default()
        },
    );
    assert_eq!(
        got,
        vec![
            (
                None,
                ghost,
                100,
                Some("This server does not host this topic ID.".into())
            ),
            (Some("b".into()), b, 0, None),
        ]
    );
    assert_eq!(store.state().topics.len(), 1);
}

#[test]
fn ambiguous_delete_requests_are_invalid() {
    let mut store = Store::new();
    create(&mut store, vec![topic("a", 1, 1), topic("b", 1, 1)], false);
    let a = store.state().topics.get("a").unwrap().id;
    let state = |name: Option<&str>, id: Uuid| DeleteTopicState {
        name: name.map(str::to_owned),
        topic_id: id,
        ..Default::default()
    };
    let got = delete(
        &mut store,
        DeleteTopicsRequest {
            topics: vec![
                state(None, Uuid::nil()),
                state(Some("b"), Uuid::from_u128(5)),
                state(Some("x"), Uuid::nil()),
                state(Some("x"), Uuid::nil()),
                state(None, Uuid::from_u128(9)),
                state(None, Uuid::from_u128(9)),
                state(None, a),
                state(Some("a"), Uuid::nil()),
            ],
            ..Default::default()
        },
    );
    let codes: Vec<(Option<&str>, i16, Option<&str>)> = got
        .iter()
        .map(|(n, _, c, m)| (n.as_deref(), *c, m.as_deref()))
        .collect();
    assert_eq!(
        codes,
        vec![
            (None, 42, Some("Neither topic name nor id were specified.")),
            (
                Some("b"),
                42,
                Some("You may not specify both topic name and topic id.")
            ),
            (Some("x"), 42, Some("Duplicate topic name.")),
            (None, 42, Some("Duplicate topic id.")),
            (
                Some("a"),
                42,
                Some("The provided topic name maps to an ID that was already supplied.")
            ),
        ]
    );
    assert_eq!(store.state().topics.len(), 2);
}

#[test]
fn random_topic_ids_follow_kafka_rules() {
    for _ in 0..1000 {
        let id = random_topic_id();
        assert!(!id.is_nil());
        assert_ne!(id.as_bytes()[0] >> 2, 62);
    }
}

#[test]
fn create_topics_answers_a_huge_list_of_duplicates_once_per_name_in_order() {
    // 200,000 names: 5,000 given once, 95,000 given twice (the second time in reverse order),
    // 5,000 of those a third time.
    let name = |i: usize| format!("n-{i}");
    let mut topics: Vec<CreatableTopic> = (0..100_000).map(|i| topic(&name(i), 1, 1)).collect();
    topics.extend(
        (0..100_000)
            .rev()
            .filter(|i| i % 20 != 0)
            .map(|i| topic(&name(i), 1, 1)),
    );
    topics.extend(
        (0..100_000)
            .filter(|i| i % 20 == 1)
            .map(|i| topic(&name(i), 1, 1)),
    );
    assert_eq!(topics.len(), 200_000);
    let mut store = Store::new();
    let results = create(&mut store, topics, false);

    let mut expected: Vec<(String, i16, Option<&str>)> = (0..100_000)
        .filter(|i| i % 20 == 0)
        .map(|i| (name(i), 0, None))
        .collect();
    expected.extend(
        (0..100_000)
            .rev()
            .filter(|i| i % 20 != 0)
            .map(|i| (name(i), 42, Some("Duplicate topic name."))),
    );
    let got: Vec<(String, i16, Option<&str>)> = codes(&results)
        .into_iter()
        .map(|(n, c, m)| (n.to_owned(), c, m))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(store.state().topics.len(), 5_000);
}

#[test]
fn delete_topics_answers_a_huge_list_of_duplicates_as_kafka_in_order() {
    // 40,000 topics; by i % 4: 0 named once (deleted), 1 named twice, 2 named once and given
    // by id once (neither deleted), 3 given by id twice. Plus 10,000 unknown ids and names.
    let name = |i: usize| format!("t-{i}");
    let mut store = Store::new();
    let mut next = 100u128;
    for chunk in (0..40_000).collect::<Vec<usize>>().chunks(5_000) {
        let request = CreateTopicsRequest {
            topics: chunk.iter().map(|&i| topic(&name(i), 1, 1)).collect(),
            ..Default::default()
        };
        let decision = create_topics(
            &store.state().topics,
            &DEFAULTS,
            &UNLIMITED,
            &request,
            || {
                next += 1;
                Uuid::from_u128(next)
            },
        );
        store.append(decision.records).unwrap();
    }
    let ids: Vec<Uuid> = (0..40_000)
        .map(|i| store.state().topics.get(&name(i)).unwrap().id)
        .collect();
    let unknown_id = |j: usize| Uuid::from_u128(10_000_000 + j as u128);
    let unknown_name = |j: usize| format!("zz-{j}");
    let by_name = |n: String| DeleteTopicState {
        name: Some(n),
        topic_id: Uuid::nil(),
        ..Default::default()
    };
    let by_id = |id: Uuid| DeleteTopicState {
        name: None,
        topic_id: id,
        ..Default::default()
    };
    let mut topics = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        topics.push(match i % 4 {
            0 | 1 => by_name(name(i)),
            _ => by_id(id),
        });
    }
    topics.extend((0..10_000).map(|j| by_id(unknown_id(j))));
    topics.extend((0..10_000).map(|j| by_name(unknown_name(j))));
    for i in (0..40_000).rev() {
        topics.push(match i % 4 {
            1 | 2 => by_name(name(i)),
            3 => by_id(ids[i]),
            _ => continue,
        });
    }
    assert_eq!(topics.len(), 90_000);
    let got = delete(
        &mut store,
        DeleteTopicsRequest {
            topics,
            ..Default::default()
        },
    );

    let msg = |s: &str| Some(s.to_owned());
    let mut expected = Vec::new();
    for i in (0..40_000).rev().filter(|i| i % 4 == 1) {
        expected.push((Some(name(i)), Uuid::nil(), 42, msg("Duplicate topic name.")));
    }
    for i in (0..40_000).rev().filter(|i| i % 4 == 3) {
        expected.push((None, ids[i], 42, msg("Duplicate topic id.")));
    }
    for j in 0..10_000 {
        expected.push((
            None,
            unknown_id(j),
            100,
            msg("This server does not host this topic ID."),
        ));
    }
    for j in 0..10_000 {
        expected.push((
            Some(unknown_name(j)),
            Uuid::nil(),
            3,
            msg("This server does not host this topic-partition."),
        ));
    }
    for i in (0..40_000).rev().filter(|i| i % 4 == 2) {
        expected.push((
            Some(name(i)),
            ids[i],
            42,
            msg("The provided topic name maps to an ID that was already supplied."),
        ));
    }
    for i in (0..40_000).filter(|i| i % 4 == 0) {
        expected.push((Some(name(i)), ids[i], 0, None));
    }
    if let Some(k) = (0..got.len().min(expected.len())).find(|&k| got[k] != expected[k]) {
        panic!("answer {k}: {:?} != {:?}", got[k], expected[k]);
    }
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "answers differ from Kafka's");
    assert_eq!(store.state().topics.len(), 30_000);
}

/// Creates `topics` under `limits` and applies the records; the answers.
fn create_limited(
    store: &mut Store,
    limits: &TopicLimits,
    topics: Vec<CreatableTopic>,
    validate_only: bool,
) -> Vec<CreatableTopicResult> {
    let mut next = 100 + 1_000 * u128::from(store.log().next_offset());
    let request = CreateTopicsRequest {
        topics,
        validate_only,
        ..Default::default()
    };
    let decision = create_topics(&store.state().topics, &DEFAULTS, limits, &request, || {
        next += 1;
        Uuid::from_u128(next)
    });
    store.append(decision.records).unwrap();
    decision.results
}

#[test]
fn the_catalog_limits_refuse_with_policy_violation_once_reached() {
    let limits = TopicLimits {
        max_topics: 3,
        max_partitions: 10,
    };
    let mut store = Store::new();
    let policy = ErrorCode::POLICY_VIOLATION.code();
    // Validate-only counts the request's own topics but creates nothing.
    let got = create_limited(
        &mut store,
        &limits,
        vec![topic("a", 4, 1), topic("b", 7, 1), topic("c", 6, 1)],
        true,
    );
    assert_eq!(
        got.iter().map(|r| r.error_code).collect::<Vec<_>>(),
        vec![0, policy, 0]
    );
    assert!(store.state().topics.is_empty());

    let got = create_limited(
        &mut store,
        &limits,
        vec![topic("a", 4, 1), topic("b", 7, 1), topic("c", 6, 1)],
        false,
    );
    assert_eq!(
        codes(&got),
        vec![
            ("a", 0, None),
            ("b", policy, Some("Topic 'b' cannot be created: its 7 partitions would take the cluster past its maximum of 10 partitions (controller.max.partitions); 6 are left.")),
            ("c", 0, None),
        ]
    );
    assert_eq!(store.state().topics.partition_count(), 10);
    // Full on partitions; invalid requests still get their own error first.
    let got = create_limited(
        &mut store,
        &limits,
        vec![topic("d", 1, 1), topic("e", 0, 1), topic("a", 1, 1)],
        false,
    );
    assert_eq!(
        got.iter().map(|r| r.error_code).collect::<Vec<_>>(),
        vec![
            policy,
            ErrorCode::INVALID_PARTITIONS.code(),
            ErrorCode::TOPIC_ALREADY_EXISTS.code()
        ]
    );
    // Deleting makes room again; then the topic count is the bound.
    let deleted = delete_topics(
        &store.state().topics,
        &DeleteTopicsRequest {
            topic_names: vec!["c".into()],
            ..Default::default()
        },
    );
    store.append(deleted.records).unwrap();
    let got = create_limited(
        &mut store,
        &limits,
        vec![topic("x", 1, 1), topic("y", 1, 1), topic("z", 1, 1)],
        false,
    );
    assert_eq!(
        codes(&got),
        vec![
            ("x", 0, None),
            ("y", 0, None),
            ("z", policy, Some("Topic 'z' cannot be created: the cluster holds its maximum of 3 topics (controller.max.topics).")),
        ]
    );
    assert_eq!(store.state().topics.len(), 3);
}

/// The collision check looks the name up in the catalog's index: 10,000 names against a
/// catalog of 40,000 topics with '.' or '_' (a scan per name was 4x10^8 unifications).
#[test]
fn collisions_are_checked_against_a_large_catalog_by_index() {
    let mut store = Store::new();
    for chunk in (0..40_000).collect::<Vec<usize>>().chunks(10_000) {
        let got = create_limited(
            &mut store,
            &UNLIMITED,
            chunk
                .iter()
                .map(|i| topic(&format!("app.{i}_out"), 1, 1))
                .collect(),
            false,
        );
        assert!(got.iter().all(|r| r.error_code == 0));
    }
    let probes: Vec<CreatableTopic> = (0..10_000)
        .map(|i| {
            // Even: collides with app.{i}_out; odd: a fresh name.
            let name = if i % 2 == 0 {
                format!("app_{i}.out")
            } else {
                format!("new_{i}")
            };
            topic(&name, 1, 1)
        })
        .collect();
    let got = create_limited(&mut store, &UNLIMITED, probes, true);
    for (i, r) in got.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(r.error_code, ErrorCode::INVALID_TOPIC_EXCEPTION.code());
            assert_eq!(
                r.error_message.as_deref(),
                Some(
                    format!("Topic 'app_{i}.out' collides with existing topic: app.{i}_out")
                        .as_str()
                )
            );
        } else {
            assert_eq!(r.error_code, 0, "{}", r.name);
        }
    }
}
