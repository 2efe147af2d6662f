//! ACLs and SCRAM credentials: decided without changing anything, applied as one batch, and
//! rebuilt by replaying the log.

use kcoord_acl::{AclBindingFilter, AclCreation};
use kcoord_controller::{Controller, ControllerConfig};
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::AlterUserScramCredentialsRequest;

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn creation(name: &str) -> AclCreation {
    AclCreation {
        resource_type: 2,
        resource_name: name.into(),
        pattern_type: 3,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: 3,
        permission: 3,
    }
}

fn random_id() -> uuid::Uuid {
    uuid::Uuid::from_u128(rand::random())
}

#[test]
fn acls_are_indexed_once_applied_and_after_replay() {
    let mut controller = Controller::new(ControllerConfig::new(CLUSTER)).unwrap();
    let outcome = controller.create_acls(&[creation("t"), creation("u")], random_id);
    assert!(
        controller.acls().is_empty(),
        "nothing changes until applied"
    );
    let results = controller.apply(outcome).unwrap();
    assert_eq!(results, vec![Ok(()), Ok(())]);
    assert_eq!(controller.acls().len(), 2);
    assert_eq!(controller.state().security.acls().count(), 2);

    let only_t = AclBindingFilter {
        resource_name: Some("t".into()),
        ..AclBindingFilter::any()
    };
    let outcome = controller.delete_acls(&[only_t]);
    let results = controller.apply(outcome).unwrap();
    assert_eq!(results[0].as_ref().unwrap()[0].resource_name, "t");
    assert_eq!(controller.acls().len(), 1);

    let log = controller.store().log().clone();
    let replayed = Controller::from_log(ControllerConfig::new(CLUSTER), &log, 0).unwrap();
    let names: Vec<&str> = replayed
        .acls()
        .iter()
        .map(|(_, acl)| acl.resource_name.as_str())
        .collect();
    assert_eq!(names, vec!["u"]);
}

#[test]
fn scram_credentials_survive_replay() {
    let mut controller = Controller::new(ControllerConfig::new(CLUSTER)).unwrap();
    let request = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: "alice".into(),
            mechanism: 2,
            iterations: 8192,
            salt: b"pepper".to_vec().into(),
            salted_password: vec![1; 64].into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let outcome = controller.alter_scram_credentials(&request);
    let results = controller.apply(outcome).unwrap();
    assert_eq!(results[0].error_code, 0);

    let log = controller.store().log().clone();
    let replayed = Controller::from_log(ControllerConfig::new(CLUSTER), &log, 0).unwrap();
    let stored = replayed.state().security.credential("alice", 2).unwrap();
    assert_eq!(stored.iterations, 8192);
    assert_eq!(stored.salt.as_ref(), b"pepper");
}
