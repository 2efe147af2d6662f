//! `Client::list_topics` against fake servers: ListTopics (key 96) when ApiVersions offers it,
//! Metadata when it does not (R83), and the describe calls of issue 6.

mod support;

use kcoord_client::admin::{ConfigSource, ListTopicsSource, TopicListing};
use kcoord_client::{Client, ClientConfig};
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kcoord_wire::messages::list_topics_response::TopicListing as WireListing;
use kcoord_wire::messages::metadata_response::MetadataResponseTopic;
use kcoord_wire::messages::{
    ApiVersionsRequest, DescribeConfigsRequest, DescribeConfigsResponse, ListTopicsRequest,
    ListTopicsResponse, MetadataRequest, MetadataResponse,
};
use support::{api_versions, every_api, every_api_but, response, FakeServer, Reply};

fn listing(name: &str, internal: bool) -> TopicListing {
    TopicListing {
        name: name.into(),
        internal,
    }
}

/// A server with `orders`, `__consumer_offsets`, and a topic Metadata reports with an error.
fn serve(
    apis: Vec<(ApiKey, i16, i16)>,
) -> impl Fn(&support::Received) -> Reply + Send + Sync + 'static {
    move |r| match ApiKey::from_i16(r.api_key()) {
        Some(ApiKey::ApiVersions) => response(r, &api_versions(&apis)),
        Some(ApiKey::ListTopics) => {
            let req: ListTopicsRequest = r.decode();
            let mut topics = vec![WireListing {
                name: "orders".into(),
                internal: false,
                ..Default::default()
            }];
            if req.list_internal {
                topics.insert(
                    0,
                    WireListing {
                        name: "__consumer_offsets".into(),
                        internal: true,
                        ..Default::default()
                    },
                );
            }
            response(
                r,
                &ListTopicsResponse {
                    topics,
                    ..Default::default()
                },
            )
        }
        Some(ApiKey::Metadata) => {
            let req: MetadataRequest = r.decode();
            assert!(req.topics.is_none(), "all topics");
            assert!(
                !req.allow_auto_topic_creation,
                "listing never creates topics"
            );
            let topic = |name: &str, internal, error_code| MetadataResponseTopic {
                name: Some(name.into()),
                is_internal: internal,
                error_code,
                ..Default::default()
            };
            let topics = vec![
                topic("orders", false, 0),
                topic("__consumer_offsets", true, 0),
                topic("hidden", false, 29),
            ];
            response(
                r,
                &MetadataResponse {
                    topics,
                    ..Default::default()
                },
            )
        }
        _ => Reply::Close,
    }
}

async fn client(addr: &str) -> Client {
    Client::connect(addr, ClientConfig::new("list-topics-test"))
        .await
        .unwrap()
}

#[tokio::test]
async fn r83_list_topics_uses_list_topics_when_offered() {
    let (addr, log, _) = FakeServer::bind().await.serve(serve(every_api()));
    let c = client(&addr).await;
    let (topics, source) = c.list_topics_via(true).await.unwrap();
    assert_eq!(
        topics,
        vec![
            listing("__consumer_offsets", true),
            listing("orders", false)
        ]
    );
    assert_eq!(source, ListTopicsSource::ListTopics { version: 1 });
    assert_eq!(
        c.list_topics(false).await.unwrap(),
        vec![listing("orders", false)]
    );
    let sent: Vec<bool> = log
        .of(ApiKey::ListTopics)
        .iter()
        .map(|r| r.decode::<ListTopicsRequest>().list_internal)
        .collect();
    assert_eq!(sent, vec![true, false]);
    assert!(log.of(ApiKey::Metadata).is_empty());
}

#[tokio::test]
async fn r83_list_topics_speaks_v0_to_a_server_that_only_has_v0() {
    let (addr, log, _) = FakeServer::bind()
        .await
        .serve(serve(every_api_but(ApiKey::ListTopics, Some((0, 0)))));
    let (topics, source) = client(&addr).await.list_topics_via(false).await.unwrap();
    assert_eq!(
        (topics, source),
        (
            vec![listing("orders", false)],
            ListTopicsSource::ListTopics { version: 0 }
        )
    );
    assert_eq!(log.of(ApiKey::ListTopics)[0].version(), 0);
}

#[tokio::test]
async fn r83_list_topics_falls_back_to_metadata_without_key_96() {
    let (addr, log, _) = FakeServer::bind()
        .await
        .serve(serve(every_api_but(ApiKey::ListTopics, None)));
    let c = client(&addr).await;
    let (topics, source) = c.list_topics_via(true).await.unwrap();
    // The topic Metadata answered with an error is left out, as Kafka's admin client does.
    assert_eq!(
        topics,
        vec![
            listing("__consumer_offsets", true),
            listing("orders", false)
        ]
    );
    assert!(
        matches!(source, ListTopicsSource::Metadata { version: 13 }),
        "{source:?}"
    );
    assert_eq!(
        c.list_topics(false).await.unwrap(),
        vec![listing("orders", false)]
    );
    assert!(
        log.of(ApiKey::ListTopics).is_empty(),
        "never sent to a server that did not offer it"
    );
    assert_eq!(log.of(ApiKey::Metadata).len(), 2);
    assert_eq!(
        log.of(ApiKey::ApiVersions)[0]
            .decode::<ApiVersionsRequest>()
            .client_software_name,
        "kcoord-client"
    );
}

#[tokio::test]
async fn broker_configs_come_from_describe_configs() {
    let (addr, log, _) = FakeServer::bind()
        .await
        .serve(|r| match ApiKey::from_i16(r.api_key()) {
            Some(ApiKey::ApiVersions) => response(r, &api_versions(&every_api())),
            Some(ApiKey::DescribeConfigs) => {
                let req: DescribeConfigsRequest = r.decode();
                let resource = &req.resources[0];
                let config = |name: &str, value: Option<&str>| DescribeConfigsResourceResult {
                    name: name.into(),
                    value: value.map(str::to_owned),
                    read_only: true,
                    config_source: 4,
                    ..Default::default()
                };
                let result = if resource.resource_name == "4" {
                    DescribeConfigsResult {
                        resource_type: 4,
                        resource_name: "4".into(),
                        configs: vec![
                            config("num.io.threads", Some("16")),
                            config("broker.rack", None),
                        ],
                        ..Default::default()
                    }
                } else {
                    DescribeConfigsResult {
                        error_code: 42,
                        error_message: Some("Unexpected broker id".into()),
                        resource_type: 4,
                        resource_name: resource.resource_name.clone(),
                        ..Default::default()
                    }
                };
                response(
                    r,
                    &DescribeConfigsResponse {
                        results: vec![result],
                        ..Default::default()
                    },
                )
            }
            _ => Reply::Close,
        });
    let c = client(&addr).await;
    let configs = c.describe_broker_configs(4).await.unwrap();
    let got: Vec<(&str, Option<&str>, ConfigSource)> = configs
        .iter()
        .map(|c| (c.name.as_str(), c.value.as_deref(), c.source))
        .collect();
    assert_eq!(
        got,
        vec![
            ("broker.rack", None, ConfigSource::StaticBrokerConfig),
            (
                "num.io.threads",
                Some("16"),
                ConfigSource::StaticBrokerConfig
            )
        ]
    );
    let e = c.describe_broker_configs(9).await.unwrap_err();
    assert_eq!(
        e.error_code(),
        Some(kcoord_wire::ErrorCode::INVALID_REQUEST),
        "{e}"
    );
    let sent = log.of(ApiKey::DescribeConfigs);
    assert_eq!(sent[0].version(), 4);
    assert_eq!(
        sent[0].decode::<DescribeConfigsRequest>().resources[0].resource_type,
        4
    );
}
