//! Kafka's client quotas over the wire: AlterClientQuotas and DescribeClientQuotas against the
//! real daemon (in process, on free loopback ports), the quotas kept in the metadata log across
//! a restart, and Kafka's refusals. Every wait is bounded.

mod streams_support;

use kcoord_client::Connection;
use kcoord_wire::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kcoord_wire::messages::describe_client_quotas_request::ComponentData;
use kcoord_wire::messages::{
    AlterClientQuotasRequest, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
};
use streams_support::Node;

async fn start(dir: &std::path::Path) -> Node {
    let log_dir = format!("metadata.log.dir={}", dir.display());
    streams_support::start(&["offsets.topic.num.partitions=1", &log_dir]).await
}

fn entry(parts: &[(&str, Option<&str>)], ops: &[(&str, f64, bool)]) -> EntryData {
    EntryData {
        entity: parts
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: (*t).into(),
                entity_name: n.map(str::to_owned),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(key, value, remove)| OpData {
                key: (*key).into(),
                value: *value,
                remove: *remove,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Alters and returns each entry's (error code, message).
async fn alter(
    conn: &Connection,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let request = AlterClientQuotasRequest {
        entries,
        validate_only,
        ..Default::default()
    };
    let response = conn.send(request, 1).await.unwrap();
    response
        .entries
        .into_iter()
        .map(|e| (e.error_code, e.error_message))
        .collect()
}

async fn describe(
    conn: &Connection,
    components: Vec<ComponentData>,
    strict: bool,
) -> DescribeClientQuotasResponse {
    let request = DescribeClientQuotasRequest {
        components,
        strict,
        ..Default::default()
    };
    conn.send(request, 1).await.unwrap()
}

/// Every entity described, as `type=name,...: key=value,...`.
fn listed(response: &DescribeClientQuotasResponse) -> Vec<String> {
    response
        .entries
        .iter()
        .flatten()
        .map(|e| {
            let entity: Vec<String> = e
                .entity
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        p.entity_type,
                        p.entity_name.as_deref().unwrap_or("<default>")
                    )
                })
                .collect();
            let values: Vec<String> = e
                .values
                .iter()
                .map(|v| format!("{}={}", v.key, v.value))
                .collect();
            format!("{}: {}", entity.join(","), values.join(","))
        })
        .collect()
}

fn user_component(match_type: i8, name: Option<&str>) -> ComponentData {
    ComponentData {
        entity_type: "user".into(),
        match_type,
        r#match: name.map(str::to_owned),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_set_over_the_wire_are_described_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let results = alter(
        &conn,
        vec![
            entry(
                &[("user", Some("alice"))],
                &[
                    ("producer_byte_rate", 1024.0, false),
                    ("request_percentage", 50.0, false),
                ],
            ),
            entry(
                &[("user", Some("alice")), ("client-id", Some("app"))],
                &[("consumer_byte_rate", 4096.0, false)],
            ),
            entry(&[("user", None)], &[("producer_byte_rate", 2048.0, false)]),
            entry(
                &[("ip", Some("127.0.0.2"))],
                &[("connection_creation_rate", 10.0, false)],
            ),
        ],
        false,
    )
    .await;
    assert_eq!(results, vec![(0, None); 4]);
    // validateOnly decides without writing.
    let checked = alter(
        &conn,
        vec![entry(
            &[("client-id", Some("dry"))],
            &[("producer_byte_rate", 1.0, false)],
        )],
        true,
    )
    .await;
    assert_eq!(checked, vec![(0, None)]);
    // A removal takes one key away.
    alter(
        &conn,
        vec![entry(
            &[("user", Some("alice"))],
            &[("request_percentage", 0.0, true)],
        )],
        false,
    )
    .await;

    let expected = vec![
        "client-id=app,user=alice: consumer_byte_rate=4096".to_owned(),
        "user=alice: producer_byte_rate=1024".to_owned(),
    ];
    let exact = describe(&conn, vec![user_component(0, Some("alice"))], false).await;
    assert_eq!((exact.error_code, listed(&exact)), (0, expected.clone()));
    let everything = describe(&conn, vec![], false).await;
    assert_eq!(listed(&everything).len(), 4, "{:?}", listed(&everything));
    drop(conn);
    node.stop().await;

    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let exact = describe(&conn, vec![user_component(0, Some("alice"))], false).await;
    assert_eq!(listed(&exact), expected, "after the restart");
    let default = describe(&conn, vec![user_component(1, None)], true).await;
    assert_eq!(
        listed(&default),
        vec!["user=<default>: producer_byte_rate=2048".to_owned()]
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_alterations_and_filters_get_kafkas_errors() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path()).await;
    let conn = node.connect().await;
    let results = alter(
        &conn,
        vec![
            entry(
                &[("user", Some("bob"))],
                &[("producer_byte_rate", -1.0, false)],
            ),
            entry(
                &[("client-id", Some("c"))],
                &[("producer_byte_rate", 10.5, false)],
            ),
            entry(
                &[("ip", Some("127.0.0.1")), ("user", Some("bob"))],
                &[("connection_creation_rate", 1.0, false)],
            ),
            entry(
                &[("user", Some("carol"))],
                &[("bytes_per_fortnight", 1.0, false)],
            ),
        ],
        false,
    )
    .await;
    let invalid = 42;
    assert_eq!(
        results,
        vec![
            (invalid, Some("Quota producer_byte_rate must be greater than 0".to_owned())),
            (invalid, Some("producer_byte_rate cannot be a fractional value.".to_owned())),
            (invalid, Some("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId".to_owned())),
            (invalid, Some("Invalid configuration key bytes_per_fortnight".to_owned())),
        ]
    );
    assert!(
        listed(&describe(&conn, vec![], false).await).is_empty(),
        "nothing was written"
    );
    let refused = describe(&conn, vec![user_component(0, None)], false).await;
    assert_eq!(
        (
            refused.error_code,
            refused.error_message.as_deref(),
            refused.entries.is_none()
        ),
        (
            invalid,
            Some("Request specified MATCH_TYPE_EXACT, but set match string to null."),
            true
        )
    );
    node.stop().await;
}
