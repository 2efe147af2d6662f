//! Exit codes and messages of `--describe --topology` for every topology description status
//! and for group errors, driven through the command logic with a fake admin.

mod common;

use common::*;
use kcoord_streams_groups::topology::TopologyDescriptionStatus as Status;

fn orders_with(status: Status, topology: bool) -> FakeAdmin {
    let topology = topology.then(|| model(&orders_wire()));
    FakeAdmin::default().with_group(Described::Ok(with_topology(orders_app(), status, topology)))
}

const DESCRIBE: [&str; 4] = ["--describe", "--topology", "--group", "orders-app"];

#[tokio::test]
async fn r58_available_prints_the_topology_and_exits_0() {
    let run = run(&orders_with(Status::Available, true), &DESCRIBE).await;
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert_golden("orders.topology.txt", &run.stdout);

    let json = common::run(
        &orders_with(Status::Available, true),
        &[&DESCRIBE[..], &["--output", "json"]].concat(),
    )
    .await;
    assert_eq!((json.code, json.stderr.as_str()), (0, ""));
    assert_golden("orders.topology.json", &json.stdout);
}

#[tokio::test]
async fn r59_not_stored_prints_the_spec_message_and_exits_1() {
    let run = run(&orders_with(Status::NotStored, false), &DESCRIBE).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "\nError: No topology description has been recorded for group 'orders-app'.\n"
    );
    assert_eq!(run.stderr, "");
}

#[tokio::test]
async fn r60_error_prints_the_spec_message_and_exits_1() {
    let run = run(&orders_with(Status::Error, false), &DESCRIBE).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "\nError: The broker failed to retrieve the topology description for group 'orders-app' (check broker logs).\n"
    );
    assert_eq!(run.stderr, "");
}

#[tokio::test]
async fn machine_formats_keep_stdout_clean_on_failure() {
    for format in ["json", "dot", "mermaid"] {
        let run = run(
            &orders_with(Status::NotStored, false),
            &[&DESCRIBE[..], &["--output", format]].concat(),
        )
        .await;
        assert_eq!(run.code, 1, "{format}");
        assert_eq!(run.stdout, "", "{format}");
        assert_eq!(
            run.stderr,
            "Error: No topology description has been recorded for group 'orders-app'.\n",
            "{format}"
        );
    }
}

#[tokio::test]
async fn r61_group_errors_print_kafkas_error_text_and_exit_1() {
    let not_found = FakeAdmin::default().with_group(Described::GroupError(
        69,
        Some("Group orders-app not found.".into()),
    ));
    let run = run(&not_found, &DESCRIBE).await;
    assert_eq!((run.code, run.stdout.as_str()), (1, ""));
    assert_eq!(
        run.stderr,
        "Error: Executing streams group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group orders-app not found.\n"
    );

    // Without an ErrorMessage, Kafka's default text for the code.
    let denied = FakeAdmin::default().with_group(Described::GroupError(30, None));
    let run = common::run(&denied, &DESCRIBE).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "Error: Executing streams group command failed due to org.apache.kafka.common.errors.GroupAuthorizationException: Group authorization failed.\n"
    );
}

#[tokio::test]
async fn a_coordinator_without_describe_v1_is_a_clear_error() {
    let old = FakeAdmin::default().with_group(Described::TopologyUnsupported);
    let run = run(&old, &DESCRIBE).await;
    assert_eq!((run.code, run.stdout.as_str()), (1, ""));
    assert_eq!(run.stderr, "Error: The coordinator does not support topology descriptions (StreamsGroupDescribe v1 required).\n");
}

#[tokio::test]
async fn every_group_is_described_and_any_missing_topology_fails_the_run() {
    let admin = orders_with(Status::Available, true).with_group(Described::Ok(with_topology(
        empty_group("idle"),
        Status::NotStored,
        None,
    )));
    let run = run(
        &admin,
        &[
            "--describe",
            "--topology",
            "--group",
            "idle",
            "--group",
            "orders-app",
        ],
    )
    .await;
    assert_eq!(run.code, 1);
    let expected = "\nError: No topology description has been recorded for group 'idle'.\n"
        .to_string()
        + &std::fs::read_to_string(fixture_path("orders.topology.txt")).expect("fixture");
    assert_eq!(run.stdout, expected);
}
