//! CreateAcls, DescribeAcls, DeleteAcls, AlterUserScramCredentials and
//! DescribeUserScramCredentials over the wire: ACLs reach the StandardAuthorizer before the
//! request that created them is answered, and ACLs and credentials survive a restart.

mod streams_support;

use kcoord_client::Connection;
use kcoord_wire::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kcoord_wire::messages::create_acls_request::AclCreation;
use kcoord_wire::messages::delete_acls_request::DeleteAclsFilter;
use kcoord_wire::messages::describe_user_scram_credentials_request::UserName;
use kcoord_wire::messages::{
    AlterUserScramCredentialsRequest, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest,
    DescribeAclsResponse, DescribeUserScramCredentialsRequest,
};
use kcoord_wire::ErrorCode;
use streams_support::{connect, start};

const STANDARD: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";
const ALLOW_EVERYONE: &str = "allow.everyone.if.no.acl.found=true";

// Kafka's codes: resource CLUSTER 4, TOPIC 2; pattern LITERAL 3; operation ALTER 7,
// DESCRIBE 8, READ 3; permission DENY 2, ALLOW 3.
fn acl(resource_type: i8, name: &str, operation: i8, permission: i8) -> AclCreation {
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: 3,
        principal: "User:ANONYMOUS".into(),
        host: "*".into(),
        operation,
        permission_type: permission,
        ..Default::default()
    }
}

/// Every ACL (nullable strings default to "" in Kafka's generated messages: null means any).
fn everything() -> DescribeAclsRequest {
    DescribeAclsRequest {
        resource_type_filter: 1,
        resource_name_filter: None,
        pattern_type_filter: 1,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    }
}

async fn create(conn: &Connection, creations: Vec<AclCreation>) -> Vec<(i16, Option<String>)> {
    let response = conn
        .send(
            CreateAclsRequest {
                creations,
                ..Default::default()
            },
            3,
        )
        .await
        .expect("CreateAcls");
    response
        .results
        .into_iter()
        .map(|r| (r.error_code, r.error_message))
        .collect()
}

async fn describe(conn: &Connection) -> DescribeAclsResponse {
    conn.send(everything(), 3).await.expect("DescribeAcls")
}

#[tokio::test]
async fn a_created_acl_decides_the_next_request_and_a_deleted_one_no_longer_does() {
    let node = start(&[STANDARD, ALLOW_EVERYONE]).await;
    let conn = node.connect().await;
    assert_eq!(
        describe(&conn).await.error_code,
        0,
        "no ACL covers the cluster yet"
    );
    // Keep ALTER (to delete them again), lose DESCRIBE on the cluster.
    let results = create(
        &conn,
        vec![acl(4, "kafka-cluster", 7, 3), acl(4, "kafka-cluster", 8, 2)],
    )
    .await;
    assert_eq!(
        results,
        vec![(0, Some(String::new())), (0, Some(String::new()))],
        "Kafka's success message is the schema default, \"\""
    );
    let denied = describe(&conn).await;
    assert_eq!(
        denied.error_code,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code()
    );
    assert!(denied.resources.is_empty());

    let deleted = conn
        .send(
            DeleteAclsRequest {
                filters: vec![DeleteAclsFilter {
                    resource_type_filter: 4,
                    resource_name_filter: None,
                    pattern_type_filter: 1,
                    principal_filter: None,
                    host_filter: None,
                    operation: 1,
                    permission_type: 1,
                    ..Default::default()
                }],
                ..Default::default()
            },
            3,
        )
        .await
        .expect("DeleteAcls");
    assert_eq!(deleted.filter_results[0].error_code, 0);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 2);
    let allowed = describe(&conn).await;
    assert_eq!(
        (allowed.error_code, allowed.error_message.as_deref()),
        (0, Some(""))
    );
    assert!(allowed.resources.is_empty(), "{allowed:?}");
    node.stop().await;
}

#[tokio::test]
async fn acls_and_scram_credentials_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = format!("metadata.log.dir={}", dir.path().display());
    let config = [STANDARD, ALLOW_EVERYONE, log_dir.as_str()];
    let node = start(&config).await;
    let conn = node.connect().await;
    assert_eq!(
        create(&conn, vec![acl(2, "orders", 3, 3)]).await,
        vec![(0, Some(String::new()))]
    );
    let upsert = ScramCredentialUpsertion {
        name: "alice".into(),
        mechanism: 2,
        iterations: 8192,
        salt: b"salt".to_vec().into(),
        salted_password: vec![9; 64].into(),
        ..Default::default()
    };
    let altered = conn
        .send(
            AlterUserScramCredentialsRequest {
                upsertions: vec![upsert],
                ..Default::default()
            },
            0,
        )
        .await
        .expect("AlterUserScramCredentials");
    assert_eq!(altered.results[0].error_code, 0, "{altered:?}");
    node.stop().await;

    let node = start(&config).await;
    let conn = node.connect().await;
    let acls = describe(&conn).await;
    assert_eq!(acls.resources.len(), 1, "{acls:?}");
    assert_eq!(acls.resources[0].resource_name, "orders");
    assert_eq!(acls.resources[0].acls[0].principal, "User:ANONYMOUS");
    let credentials = conn
        .send(
            DescribeUserScramCredentialsRequest {
                users: Some(vec![UserName {
                    name: "alice".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            0,
        )
        .await
        .expect("DescribeUserScramCredentials");
    let alice = &credentials.results[0];
    assert_eq!((alice.user.as_str(), alice.error_code), ("alice", 0));
    assert_eq!(alice.credential_infos[0].mechanism, 2);
    assert_eq!(alice.credential_infos[0].iterations, 8192);

    let deleted = conn
        .send(
            AlterUserScramCredentialsRequest {
                deletions: vec![ScramCredentialDeletion {
                    name: "alice".into(),
                    mechanism: 2,
                    ..Default::default()
                }],
                ..Default::default()
            },
            0,
        )
        .await
        .expect("AlterUserScramCredentials");
    assert_eq!(deleted.results[0].error_code, 0);
    let everyone = conn
        .send(DescribeUserScramCredentialsRequest::default(), 0)
        .await
        .expect("DescribeUserScramCredentials");
    assert!(everyone.results.is_empty(), "{everyone:?}");
    node.stop().await;
}

#[tokio::test]
async fn without_an_authorizer_acls_are_security_disabled_and_credentials_still_work() {
    let node = start(&[]).await;
    let conn = node.connect().await;
    let results = create(&conn, vec![acl(2, "t", 3, 3)]).await;
    assert_eq!(
        results,
        vec![(
            ErrorCode::SECURITY_DISABLED.code(),
            Some("No Authorizer is configured.".into())
        )]
    );
    let described = describe(&conn).await;
    assert_eq!(described.error_code, ErrorCode::SECURITY_DISABLED.code());
    assert_eq!(
        described.error_message.as_deref(),
        Some("No Authorizer is configured on the broker")
    );
    let missing = conn
        .send(
            DescribeUserScramCredentialsRequest {
                users: Some(vec![UserName {
                    name: "nobody".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            0,
        )
        .await
        .expect("DescribeUserScramCredentials");
    assert_eq!(
        missing.results[0].error_code,
        ErrorCode::RESOURCE_NOT_FOUND.code()
    );
    node.stop().await;
}

#[tokio::test]
async fn a_principal_without_alter_on_the_cluster_changes_nothing() {
    // A configured authorizer, no super user, deny by default.
    let node = start(&[STANDARD]).await;
    let conn = node.connect().await;
    let results = create(&conn, vec![acl(2, "t", 3, 3)]).await;
    assert_eq!(results[0].0, ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code());
    assert_eq!(
        results[0].1.as_deref(),
        Some("Request CreateAcls from User:ANONYMOUS needs ALTER permission.")
    );
    let credentials = conn
        .send(
            AlterUserScramCredentialsRequest {
                deletions: vec![ScramCredentialDeletion {
                    name: "bob".into(),
                    mechanism: 1,
                    ..Default::default()
                }],
                ..Default::default()
            },
            0,
        )
        .await
        .expect("AlterUserScramCredentials");
    assert_eq!(credentials.results[0].user, "bob");
    assert_eq!(
        credentials.results[0].error_code,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code()
    );
    // The controller listener serves CreateAcls too, with the same rules.
    let controller = connect(&node.controller).await;
    let results = create(&controller, vec![acl(2, "t", 3, 3)]).await;
    assert_eq!(results[0].0, ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code());
    node.stop().await;
}

#[tokio::test]
async fn an_unknown_code_in_an_acl_request_closes_the_connection_and_changes_nothing() {
    let node = start(&[STANDARD, ALLOW_EVERYONE]).await;
    let mut unknown_operation = acl(2, "t", 3, 3);
    unknown_operation.operation = 0;
    let creation = CreateAclsRequest {
        creations: vec![acl(2, "t", 3, 3), unknown_operation],
        ..Default::default()
    };
    assert!(node.connect().await.send(creation, 3).await.is_err());
    let mut unknown_pattern = everything();
    unknown_pattern.pattern_type_filter = 0;
    assert!(node.connect().await.send(unknown_pattern, 3).await.is_err());
    let listed = describe(&node.connect().await).await;
    assert!(listed.resources.is_empty(), "{listed:?}");
    node.stop().await;
}
