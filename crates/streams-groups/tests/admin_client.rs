//! The real admin client (`ClientAdmin` over `kcoord_client`) against a fake broker: version
//! negotiation, IncludeTopologyDescription, retries, and the program end to end.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::broker::{described, BrokerSpec, FakeBroker};
use common::*;
use kcoord_client::{Client, ClientConfig};
use kcoord_streams_groups::admin::{ClientAdmin, StreamsAdmin};
use kcoord_streams_groups::topology::TopologyDescriptionStatus;
use kcoord_streams_groups::AdminError;
use kcoord_wire::messages::list_groups_response::ListedGroup;

async fn admin(broker: &FakeBroker) -> ClientAdmin {
    let client = Client::connect(&broker.bootstrap(), ClientConfig::new("test"))
        .await
        .expect("connect");
    ClientAdmin::new(client, Duration::from_secs(5))
}

fn spec_with_orders(status: i8) -> BrokerSpec {
    let description = (status == 3).then(orders_wire);
    let mut spec = BrokerSpec::default();
    spec.groups.insert(
        "orders-app".into(),
        described("orders-app", status, description),
    );
    spec
}

#[tokio::test]
async fn describe_with_topology_uses_v1_and_converts_the_description() {
    let broker = FakeBroker::start(spec_with_orders(3)).await;
    let d = admin(&broker)
        .await
        .describe_streams_group("orders-app", true)
        .await
        .expect("describe");
    assert_eq!(
        d.topology_description_status,
        TopologyDescriptionStatus::Available
    );
    assert_eq!(d.topology_description, Some(model(&orders_wire())));
    assert_eq!(d.coordinator.id, 1);
    assert_eq!(d.assignor_name.as_deref(), Some("sticky"));
    assert_eq!(*broker.spec.describes.lock().unwrap(), vec![(1, true)]);
}

#[tokio::test]
async fn other_describes_do_not_ask_for_the_topology() {
    let broker = FakeBroker::start(spec_with_orders(0)).await;
    let d = admin(&broker)
        .await
        .describe_streams_group("orders-app", false)
        .await
        .expect("describe");
    assert_eq!(
        d.topology_description_status,
        TopologyDescriptionStatus::NotRequested
    );
    assert_eq!(*broker.spec.describes.lock().unwrap(), vec![(1, false)]);
}

#[tokio::test]
async fn a_v0_coordinator_cannot_describe_topologies() {
    let broker = FakeBroker::start(BrokerSpec {
        describe_versions: Some((0, 0)),
        ..spec_with_orders(0)
    })
    .await;
    let admin = admin(&broker).await;
    assert!(matches!(
        admin.describe_streams_group("orders-app", true).await,
        Err(AdminError::TopologyUnsupported)
    ));
    // Nothing was sent; a plain describe still works at v0.
    assert!(broker.spec.describes.lock().unwrap().is_empty());
    admin
        .describe_streams_group("orders-app", false)
        .await
        .expect("v0 describe");
    assert_eq!(*broker.spec.describes.lock().unwrap(), vec![(0, false)]);

    let none = FakeBroker::start(BrokerSpec {
        describe_versions: None,
        ..spec_with_orders(0)
    })
    .await;
    let admin = self::admin(&none).await;
    assert!(matches!(
        admin.describe_streams_group("orders-app", true).await,
        Err(AdminError::TopologyUnsupported)
    ));
}

#[tokio::test]
async fn not_coordinator_is_retried_and_group_errors_are_reported() {
    let spec = spec_with_orders(1);
    spec.not_coordinator_first.store(2, Ordering::SeqCst);
    let broker = FakeBroker::start(spec).await;
    let admin = admin(&broker).await;
    let d = admin
        .describe_streams_group("orders-app", true)
        .await
        .expect("describe after retries");
    assert_eq!(
        d.topology_description_status,
        TopologyDescriptionStatus::NotStored
    );
    assert_eq!(broker.spec.describes.lock().unwrap().len(), 3);

    let err = admin
        .describe_streams_group("nope", true)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found."
    );
}

#[tokio::test]
async fn list_groups_asks_for_streams_groups() {
    let mut spec = BrokerSpec::default();
    let listed = |id: &str, state: &str| ListedGroup {
        group_id: id.into(),
        protocol_type: "streams".into(),
        group_state: state.into(),
        group_type: "streams".into(),
        ..Default::default()
    };
    spec.listed = vec![listed("orders-app", "Stable"), listed("idle", "Empty")];
    let broker = FakeBroker::start(spec).await;
    let admin = admin(&broker).await;
    let all = admin.list_streams_groups(&[]).await.expect("list");
    // The client library lists groups sorted by id.
    assert_eq!(
        kcoord_streams_groups::tables::format_group_states(&all),
        "GROUP           STATE\nidle            Empty\norders-app      Stable\n"
    );
    let empty = admin
        .list_streams_groups(&[kcoord_streams_groups::model::GroupState::Empty])
        .await
        .expect("list");
    assert_eq!(
        kcoord_streams_groups::tables::format_group_ids(&empty),
        "idle\n"
    );
    admin
        .delete_streams_groups(&["idle".to_string()])
        .await
        .expect("delete")
        .into_iter()
        .for_each(|(_, r)| r.expect("deleted"));
}
