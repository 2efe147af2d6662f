use kcoord_metadata::Store;
use kcoord_wire::records::TopicRecord;
use uuid::Uuid;

use super::*;

const NODE: i32 = 1;

fn store_with_topic(name: &str) -> Store {
    let mut store = Store::new();
    store
        .append(vec![Record::Topic(TopicRecord {
            name: name.into(),
            topic_id: Uuid::from_u128(9),
            ..Default::default()
        })])
        .unwrap();
    store
}

fn incremental(resource_type: i8, name: &str, ops: &[(&str, i8, Option<&str>)]) -> ConfigChange {
    ConfigChange {
        resource_type,
        name: name.into(),
        ops: ConfigOps::Incremental(
            ops.iter()
                .map(|(k, op, v)| ((*k).to_owned(), *op, v.map(str::to_owned)))
                .collect(),
        ),
    }
}

fn replace(resource_type: i8, name: &str, configs: &[(&str, &str)]) -> ConfigChange {
    ConfigChange {
        resource_type,
        name: name.into(),
        ops: ConfigOps::Replace(
            configs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
    }
}

fn apply(store: &mut Store, changes: &[ConfigChange]) -> Vec<Result<(), ResourceError>> {
    let d = alter_configs(store.state(), NODE, changes, false);
    store.append(d.records).unwrap();
    d.results
}

fn topic_configs(store: &Store, name: &str) -> Vec<(String, String)> {
    store
        .state()
        .topics
        .get(name)
        .unwrap()
        .configs
        .clone()
        .into_iter()
        .collect()
}

#[test]
fn incremental_operations_on_a_topic() {
    let mut store = store_with_topic("t");
    let results = apply(
        &mut store,
        &[incremental(
            TOPIC_RESOURCE,
            "t",
            &[
                ("retention.ms", SET, Some("1000")),
                ("cleanup.policy", APPEND, Some("compact")),
            ],
        )],
    );
    assert_eq!(results, vec![Ok(())]);
    assert_eq!(
        topic_configs(&store, "t"),
        vec![
            ("cleanup.policy".into(), "delete,compact".into()),
            ("retention.ms".into(), "1000".into())
        ]
    );
    let results = apply(
        &mut store,
        &[incremental(
            TOPIC_RESOURCE,
            "t",
            &[
                ("cleanup.policy", SUBTRACT, Some("delete")),
                ("retention.ms", DELETE, None),
            ],
        )],
    );
    assert_eq!(results, vec![Ok(())]);
    assert_eq!(
        topic_configs(&store, "t"),
        vec![("cleanup.policy".into(), "compact".into())]
    );
}

#[test]
fn kafkas_refusals_for_topics() {
    let store = store_with_topic("t");
    let d = alter_configs(
        store.state(),
        NODE,
        &[
            incremental(TOPIC_RESOURCE, "t", &[("retention.ms", APPEND, Some("1"))]),
            incremental(TOPIC_RESOURCE, "t", &[("retention.mss", SET, Some("1"))]),
            incremental(TOPIC_RESOURCE, "t", &[("segment.bytes", SET, Some("10"))]),
            incremental(TOPIC_RESOURCE, "nope", &[("retention.ms", SET, Some("1"))]),
            incremental(TOPIC_RESOURCE, "", &[("retention.ms", SET, Some("1"))]),
            incremental(TOPIC_RESOURCE, "t", &[("retention.ms", SET, Some("7"))]),
        ],
        true,
    );
    let expected: Vec<Result<(), ResourceError>> = vec![
        Err((
            ErrorCode::INVALID_CONFIG,
            Some("Can't APPEND to key retention.ms because its type is not LIST.".into()),
        )),
        Err((
            ErrorCode::INVALID_CONFIG,
            Some("Unknown topic config name: retention.mss".into()),
        )),
        Err((
            ErrorCode::INVALID_CONFIG,
            Some(
                "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"
                    .into(),
            ),
        )),
        Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            Some("The topic 'nope' does not exist.".into()),
        )),
        Err((
            ErrorCode::INVALID_REQUEST,
            Some("Default topic resources are not allowed.".into()),
        )),
        Ok(()),
    ];
    assert_eq!(d.results, expected);
    assert!(d.records.is_empty(), "validate only");
}

#[test]
fn replacing_deletes_what_is_left_out_and_brokers_always_get_records() {
    let mut store = store_with_topic("t");
    apply(
        &mut store,
        &[replace(
            TOPIC_RESOURCE,
            "t",
            &[("retention.ms", "5"), ("segment.ms", "6")],
        )],
    );
    assert_eq!(
        apply(
            &mut store,
            &[replace(TOPIC_RESOURCE, "t", &[("segment.ms", "6")])]
        ),
        vec![Ok(())]
    );
    assert_eq!(
        topic_configs(&store, "t"),
        vec![("segment.ms".into(), "6".into())]
    );
    // Unchanged topic values write nothing; a broker's are written again, as Kafka does.
    let d = alter_configs(
        store.state(),
        NODE,
        &[replace(TOPIC_RESOURCE, "t", &[("segment.ms", "6")])],
        false,
    );
    assert!(d.records.is_empty());
    apply(
        &mut store,
        &[replace(BROKER_RESOURCE, "", &[("log.retention.ms", "9")])],
    );
    let d = alter_configs(
        store.state(),
        NODE,
        &[replace(BROKER_RESOURCE, "", &[("log.retention.ms", "9")])],
        false,
    );
    assert_eq!(d.records.len(), 1);
    assert_eq!(
        store
            .state()
            .broker_configs
            .cluster_defaults()
            .and_then(|c| c.get("log.retention.ms")),
        Some(&"9".to_owned())
    );
}

#[test]
fn broker_names_are_checked_as_kafka_does() {
    let store = Store::new();
    let d = alter_configs(
        store.state(),
        NODE,
        &[
            incremental(
                BROKER_RESOURCE,
                "1",
                &[("log.retention.ms", SET, Some("1"))],
            ),
            incremental(
                BROKER_RESOURCE,
                "x",
                &[("log.retention.ms", SET, Some("1"))],
            ),
            incremental(
                BROKER_RESOURCE,
                "-2",
                &[("log.retention.ms", SET, Some("1"))],
            ),
            incremental(
                BROKER_RESOURCE,
                "5",
                &[("log.retention.ms", SET, Some("1"))],
            ),
            incremental(
                BROKER_RESOURCE,
                "",
                &[("log.cleanup.policy", APPEND, Some("compact"))],
            ),
        ],
        false,
    );
    let codes: Vec<Option<(ErrorCode, Option<String>)>> =
        d.results.iter().map(|r| r.clone().err()).collect();
    assert_eq!(
        codes,
        vec![
            None,
            Some((
                ErrorCode::INVALID_REQUEST,
                Some("Unable to parse broker name as a base 10 number.".into())
            )),
            Some((
                ErrorCode::INVALID_REQUEST,
                Some("Invalid negative broker ID.".into())
            )),
            Some((
                ErrorCode::BROKER_ID_NOT_REGISTERED,
                Some("No node with id 5 found.".into())
            )),
            None,
        ]
    );
    let mut store = store;
    store.append(d.records).unwrap();
    assert_eq!(
        store
            .state()
            .broker_configs
            .cluster_defaults()
            .and_then(|c| c.get("log.cleanup.policy")),
        Some(&"delete,compact".to_owned())
    );
}
