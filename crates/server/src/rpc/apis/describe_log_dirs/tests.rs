use std::sync::Arc;

use kcoord_wire::messages::create_topics_request::CreatableTopic;
use kcoord_wire::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kcoord_wire::messages::CreateTopicsRequest;

use super::*;
use crate::config::ListenerKind;
use crate::rpc::testing::{encodes, running, server, with_ctx};
use crate::state::ServerState;

fn call(
    state: &ServerState,
    topics: Option<Vec<(&str, Vec<i32>)>>,
    version: i16,
) -> DescribeLogDirsResponse {
    let req = DescribeLogDirsRequest {
        topics: topics.map(|t| {
            t.into_iter()
                .map(|(topic, partitions)| DescribableLogDirTopic {
                    topic: topic.into(),
                    partitions,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let resp = with_ctx(state, ListenerKind::Broker, |ctx| handle(ctx, req, version));
    encodes(&resp, version);
    resp
}

async fn create_topic(state: &ServerState, name: &str, partitions: i32) {
    let results = state
        .controller
        .create_topics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: name.into(),
                num_partitions: partitions,
                replication_factor: -1,
                ..Default::default()
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(results[0].error_code, 0);
}

/// (dir, [(topic, [(partition, size, lag, future)])]) of each result.
type Shape = Vec<(String, Vec<(String, Vec<(i32, i64, i64, bool)>)>)>;

fn shape(resp: &DescribeLogDirsResponse) -> Shape {
    resp.results
        .iter()
        .map(|r| {
            assert_eq!(r.error_code, 0);
            (
                r.log_dir.clone(),
                r.topics
                    .iter()
                    .map(|t| {
                        (
                            t.name.clone(),
                            t.partitions
                                .iter()
                                .map(|p| {
                                    (
                                        p.partition_index,
                                        p.partition_size,
                                        p.offset_lag,
                                        p.is_future_key,
                                    )
                                })
                                .collect(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn in_memory_partitions_are_one_pseudo_directory_at_every_version() {
    let r = running("");
    create_topic(&r.state, "b", 2).await;
    create_topic(&r.state, "a", 1).await;
    for version in 1..=5 {
        let resp = call(&r.state, None, version);
        assert_eq!(
            shape(&resp),
            vec![(
                IN_MEMORY_DIR.to_owned(),
                vec![
                    ("a".into(), vec![(0, 0, 0, false)]),
                    ("b".into(), vec![(0, 0, 0, false), (1, 0, 0, false)]),
                ]
            )],
            "v{version}"
        );
        assert_eq!(
            (resp.results[0].total_bytes, resp.results[0].usable_bytes),
            (-1, -1)
        );
    }
    let resp = call(
        &r.state,
        Some(vec![("b", vec![1]), ("nope", vec![0]), ("a", vec![])]),
        4,
    );
    assert_eq!(
        shape(&resp),
        vec![(
            IN_MEMORY_DIR.to_owned(),
            vec![("b".into(), vec![(1, 0, 0, false)])]
        )]
    );
}

#[tokio::test]
async fn log_dirs_are_listed_by_absolute_path_with_their_volumes_bytes() {
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    let r = running(&format!(
        "log.dirs={},{}\n",
        one.path().display(),
        two.path().display()
    ));
    create_topic(&r.state, "t", 2).await;
    let resp = call(&r.state, None, 4);
    let dirs: Vec<String> = resp.results.iter().map(|d| d.log_dir.clone()).collect();
    assert_eq!(
        dirs,
        vec![
            one.path().display().to_string(),
            two.path().display().to_string()
        ]
    );
    // The two partitions went one to each directory.
    let held: usize = resp
        .results
        .iter()
        .map(|d| d.topics.iter().map(|t| t.partitions.len()).sum::<usize>())
        .sum();
    assert_eq!(held, 2);
    for d in &resp.results {
        assert!(d.total_bytes > 0 && d.usable_bytes >= 0 && d.usable_bytes <= d.total_bytes);
    }
}

#[test]
fn without_describe_on_the_cluster_no_directory_is_listed() {
    let base = server();
    let (mut state, _) = ServerState::build(
        Arc::clone(&base.config),
        base.listeners.iter().map(|l| (**l).clone()).collect(),
    );
    state.authorizer = Some(Arc::new(crate::security::DenyAll));
    let resp = call(&state, None, 4);
    assert_eq!(
        resp.error_code,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code()
    );
    assert!(resp.results.is_empty());
}
