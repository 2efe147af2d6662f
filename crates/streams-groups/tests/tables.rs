//! Golden tests of `--list`, `--describe` (offsets, `--members`, `--state`, each with and
//! without `--verbose`, and kcoord's `--lag`) and `--delete`, run through the command logic against a fake admin.

mod common;

use common::*;
use kcoord_streams_groups::model::{CommittedOffset, GroupListing, GroupState, TopicPartition};

fn listings() -> Vec<GroupListing> {
    let listing = |id: &str, state| GroupListing {
        group_id: id.into(),
        state,
    };
    vec![
        listing("orders-app", Some(GroupState::Stable)),
        listing("payments-reconciliation-app", Some(GroupState::Reconciling)),
        listing("idle", Some(GroupState::Empty)),
        listing("legacy", None),
    ]
}

fn admin() -> FakeAdmin {
    let mut admin = FakeAdmin {
        listings: listings(),
        ..Default::default()
    }
    .with_group(Described::Ok(orders_app()))
    .with_group(Described::Ok(empty_group("idle")));
    let tp = TopicPartition::new;
    admin.committed.insert(
        tp("orders", 0),
        CommittedOffset {
            offset: 120,
            leader_epoch: Some(3),
        },
    );
    admin.committed.insert(
        tp("orders", 2),
        CommittedOffset {
            offset: 7,
            leader_epoch: None,
        },
    );
    admin.committed.insert(
        tp("orders-app-by-region-repartition", 1),
        CommittedOffset {
            offset: 42,
            leader_epoch: Some(0),
        },
    );
    // End offsets are known for two partitions only (kcoord itself never knows them).
    admin.latest.insert(tp("orders", 0), 150);
    admin.latest.insert(tp("orders", 1), 80);
    admin.earliest.insert(tp("orders", 1), 20);
    admin
}

async fn golden(name: &str, args: &[&str]) {
    let run = run(&admin(), args).await;
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{args:?}");
    assert_golden(name, &run.stdout);
}

#[tokio::test]
async fn list() {
    golden("list.txt", &["--list"]).await;
    golden("list-state.txt", &["--list", "--state"]).await;
    golden(
        "list-state-filtered.txt",
        &["--list", "--state", "stable,Empty"],
    )
    .await;
}

#[tokio::test]
async fn describe_offsets() {
    golden(
        "describe-offsets.txt",
        &["--describe", "--group", "orders-app"],
    )
    .await;
    // --offsets is the default sub-action.
    golden(
        "describe-offsets.txt",
        &["--describe", "--offsets", "--group", "orders-app"],
    )
    .await;
    golden(
        "describe-offsets-verbose.txt",
        &["--describe", "--group", "orders-app", "--verbose"],
    )
    .await;
}

/// kcoord's `--lag`: the offsets above summed per sub-topology, the one that lags most first;
/// a sub-topology none of whose partitions has a lag shows `-`.
#[tokio::test]
async fn describe_lag_per_subtopology() {
    golden(
        "describe-lag.txt",
        &["--describe", "--lag", "--group", "orders-app"],
    )
    .await;
}

#[tokio::test]
async fn describe_members() {
    golden(
        "describe-members.txt",
        &["--describe", "--members", "--group", "orders-app"],
    )
    .await;
    golden(
        "describe-members-verbose.txt",
        &[
            "--describe",
            "--members",
            "--verbose",
            "--group",
            "orders-app",
        ],
    )
    .await;
}

#[tokio::test]
async fn describe_state() {
    golden(
        "describe-state.txt",
        &["--describe", "--state", "--group", "orders-app"],
    )
    .await;
    golden(
        "describe-state-verbose.txt",
        &[
            "--describe",
            "--state",
            "--verbose",
            "--group",
            "orders-app",
        ],
    )
    .await;
}

#[tokio::test]
async fn empty_groups() {
    // --state notes an Empty group; --members and --offsets print nothing at all for it.
    golden(
        "describe-state-empty.txt",
        &["--describe", "--state", "--group", "idle"],
    )
    .await;
    golden("empty.txt", &["--describe", "--members", "--group", "idle"]).await;
    golden("empty.txt", &["--describe", "--group", "idle"]).await;
}

#[tokio::test]
async fn several_groups_repeat_the_table() {
    golden(
        "describe-state-two-groups.txt",
        &[
            "--describe",
            "--state",
            "--group",
            "orders-app",
            "--group",
            "idle",
        ],
    )
    .await;
}

#[tokio::test]
async fn delete() {
    let mut admin = admin();
    admin.listings.push(GroupListing {
        group_id: "stale".into(),
        state: Some(GroupState::Empty),
    });
    admin.listings.push(GroupListing {
        group_id: "gone".into(),
        state: Some(GroupState::Dead),
    });
    admin.delete_errors.insert("stale".into(), 30);

    let ok = run(
        &admin,
        &["--delete", "--group", "idle", "--group", "legacy"],
    )
    .await;
    assert_eq!((ok.code, ok.stderr.as_str()), (0, ""));
    assert_golden("delete-ok.txt", &ok.stdout);

    // Kafka's tool exits 0 even when some groups could not be deleted.
    let args = [
        "--delete",
        "--group",
        "orders-app",
        "--group",
        "idle",
        "--group",
        "nope",
        "--group",
        "stale",
        "--group",
        "gone",
        "--group",
        "idle",
    ];
    let partial = run(&admin, &args).await;
    assert_eq!((partial.code, partial.stderr.as_str()), (0, ""));
    assert_golden("delete-partial.txt", &partial.stdout);
}
