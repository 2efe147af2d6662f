//! The router in-process (`oneshot`), over a node whose handlers run for real: what the API
//! reads through the Kafka handlers and with which context, its error statuses, the page.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::connect_info::ConnectInfo;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::router;
use crate::rpc::authorize::{AclOperation, ResourceType};
use crate::rpc::testing::{
    create_topic, heartbeat, loading_server, running, running_with_authorizer, FAST_GROUPS,
};
use crate::security::Authorizer;
use crate::state::ServerState;

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .to_str()
            .unwrap()
    }
}

async fn get(state: &Arc<ServerState>, path: &str, peer: Option<SocketAddr>) -> Answer {
    let mut request = Request::get(path).body(Body::empty()).unwrap();
    if let Some(peer) = peer {
        request.extensions_mut().insert(ConnectInfo(peer));
    }
    let response = router(Arc::clone(state)).oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

#[tokio::test]
async fn groups_are_listed_and_described_with_their_members() {
    let r = running(FAST_GROUPS);
    create_topic(&r.state, "input", 2).await;
    heartbeat(&r.state, "orders", "m1", 0, "input").await;
    heartbeat(&r.state, "a/b", "m1", 0, "input").await;

    let list = get(&r.state, "/api/v1/groups", None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.header("cache-control"), "no-store");
    assert_eq!(list.header("content-type"), "application/json");
    let groups = list.json()["groups"].clone();
    let ids: Vec<&str> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["groupId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a/b", "orders"]);
    assert_eq!(groups[1]["memberCount"], 1);
    assert_eq!(groups[1]["topologyEpoch"], 1);

    // A group id with a slash is one path segment once percent-encoded.
    let one = get(&r.state, "/api/v1/groups/a%2Fb", None).await;
    assert_eq!(one.status, StatusCode::OK);
    let group = one.json();
    assert_eq!(group["groupId"], "a/b");
    let member = &group["members"][0];
    assert_eq!(member["memberId"], "m1");
    assert_eq!(member["processId"], "process-m1");
    assert_eq!(member["clientId"], "test-client");
    // Both partitions of the one sub-topology are m1's.
    assert_eq!(
        member["targetAssignment"]["activeTasks"],
        json!({"0": [0, 1]})
    );
    assert_eq!(group["subtopologies"][0]["sourceTopics"], json!(["input"]));
}

#[tokio::test]
async fn kafka_errors_are_http_errors_with_kafkas_names() {
    let r = running(FAST_GROUPS);
    let missing = get(&r.state, "/api/v1/groups/nobody", None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["error"], "GROUP_ID_NOT_FOUND");
    assert_eq!(missing.header("cache-control"), "no-store");

    // Its shards never start: the coordinators are loading, or not there at all.
    let loading = Arc::new(loading_server());
    for path in ["/api/v1/groups", "/api/v1/groups/g"] {
        let answer = get(&loading, path, None).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        let error = answer.json()["error"].clone();
        assert!(
            error == "COORDINATOR_LOAD_IN_PROGRESS" || error == "COORDINATOR_NOT_AVAILABLE",
            "{path}: {error}"
        );
    }
}

/// Allows the HTTP API's requests DESCRIBE on group `open` only (and everything to the test's
/// own requests), but nothing on the cluster, and records who the API's requests say they are.
#[derive(Debug, Default)]
struct OnlyOpen {
    asked: Mutex<Vec<(String, String, SocketAddr)>>,
}

impl Authorizer for OnlyOpen {
    fn authorize(
        &self,
        ctx: &crate::security::Requester<'_>,
        operation: AclOperation,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        if ctx.listener != super::kafka::LISTENER_NAME {
            return true;
        }
        self.asked.lock().unwrap().push((
            ctx.principal.to_string(),
            ctx.client_id.to_owned(),
            ctx.peer,
        ));
        match resource {
            ResourceType::Group => operation == AclOperation::Describe && name == "open",
            // No DESCRIBE on the cluster: ListGroups shows only the groups it may describe.
            ResourceType::Cluster => false,
            _ => true,
        }
    }
}

#[tokio::test]
async fn requests_are_authorized_as_an_anonymous_kafka_client_from_the_http_peer() {
    let authorizer = Arc::new(OnlyOpen::default());
    let r = running_with_authorizer(FAST_GROUPS, authorizer.clone());
    create_topic(&r.state, "input", 1).await;
    heartbeat(&r.state, "open", "m1", 0, "input").await;
    heartbeat(&r.state, "closed", "m1", 0, "input").await;
    let peer: SocketAddr = "192.0.2.7:50000".parse().unwrap();

    let list = get(&r.state, "/api/v1/groups", Some(peer)).await;
    assert_eq!(list.json()["groups"].as_array().unwrap().len(), 1);
    assert_eq!(list.json()["groups"][0]["groupId"], "open");
    let closed = get(&r.state, "/api/v1/groups/closed", Some(peer)).await;
    assert_eq!(closed.status, StatusCode::FORBIDDEN);
    assert_eq!(closed.json()["error"], "GROUP_AUTHORIZATION_FAILED");

    let asked = authorizer.asked.lock().unwrap();
    assert!(!asked.is_empty());
    for (principal, client_id, from) in asked.iter() {
        assert_eq!(principal, "User:ANONYMOUS");
        assert_eq!(*from, peer);
        assert_eq!(client_id, super::kafka::CLIENT_ID);
    }
}

#[tokio::test]
async fn the_page_and_its_assets_are_compiled_in() {
    let state = Arc::new(loading_server());
    let page = get(&state, "/", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    let html = String::from_utf8(page.body.clone()).unwrap();
    assert!(html.contains(r#"<script src="assets/app.js" defer></script>"#));
    assert!(page
        .header("content-security-policy")
        .contains("script-src 'self'"));
    for (path, content_type) in [
        ("/assets/common.js", "text/javascript; charset=utf-8"),
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/versions.js", "text/javascript; charset=utf-8"),
        ("/assets/running.js", "text/javascript; charset=utf-8"),
    ] {
        let asset = get(&state, path, None).await;
        assert_eq!(asset.status, StatusCode::OK, "{path}");
        assert_eq!(asset.header("content-type"), content_type, "{path}");
        assert!(!asset.body.is_empty());
    }
    // Nothing the page loads comes from elsewhere.
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[tokio::test]
async fn the_openapi_document_is_served() {
    let state = Arc::new(loading_server());
    let answer = get(&state, "/api/openapi.json", None).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "application/json");
    assert_eq!(answer.json()["openapi"], "3.1.0");
    assert_eq!(answer.body, super::api::OPENAPI.as_bytes());
}
