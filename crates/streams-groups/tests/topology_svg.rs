//! `--describe --topology --output svg` against the real daemon (in this process, with the
//! memory plugin): a member pushes a topology whose names need escaping, the tool prints one
//! SVG document naming every node, topic and store exactly; several groups at once are refused.

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::Duration;

use kcoord_client::admin::NewTopic;
use kcoord_client::streams::{PushResult, StreamsMember, StreamsMemberConfig, TopologyBuilder};
use kcoord_client::topology::streams::{GlobalStore, Node, Subtopology, TopologyDescription};
use kcoord_client::{Client, ClientConfig};

const WAIT: Duration = Duration::from_secs(30);

/// Names with markup, quotes, an ampersand and characters beyond ASCII, as a Kafka Streams
/// application may give its processors, topics and stores.
fn description() -> TopologyDescription {
    TopologyDescription {
        subtopologies: vec![
            Subtopology {
                id: 0,
                nodes: vec![
                    Node::source(
                        "KSTREAM-SOURCE-<0>",
                        &["orders"],
                        &["filter \"big\" & <ok>"],
                    ),
                    Node::processor(
                        "filter \"big\" & <ok>",
                        &["größe-store", "counts 'α'"],
                        &["KSTREAM-SINK-\u{1F680}"],
                    ),
                    Node::sink("KSTREAM-SINK-\u{1F680}", Some("app-rekey-repartition")),
                ],
            },
            Subtopology {
                id: 1,
                nodes: vec![
                    Node::source("src-1", &["app-rekey-repartition"], &["agg"]),
                    Node::processor("agg", &["counts 'α'"], &["out"]),
                    Node::sink("out", Some("totals & more")),
                ],
            },
        ],
        global_stores: vec![GlobalStore {
            id: 2,
            source: Node::source("global-src", &["products"], &["global-proc"]),
            processor: Node::processor("global-proc", &["products-store"], &[]),
        }],
    }
}

/// (data-kind, data-name) of every drawn node.
fn expected() -> BTreeSet<(String, String)> {
    [
        ("source", "KSTREAM-SOURCE-<0>"),
        ("processor", "filter \"big\" & <ok>"),
        ("sink", "KSTREAM-SINK-\u{1F680}"),
        ("source", "src-1"),
        ("processor", "agg"),
        ("sink", "out"),
        ("source", "global-src"),
        ("processor", "global-proc"),
        ("topic", "orders"),
        ("topic", "app-rekey-repartition"),
        ("topic", "totals & more"),
        ("topic", "products"),
        ("store", "größe-store"),
        ("store", "counts 'α'"),
        ("store", "products-store"),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .collect()
}

async fn tool(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_kafka-streams-groups"))
            .args(&args)
            .output()
            .expect("run the binary")
    })
    .await
    .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn svg_output_draws_the_pushed_topology_and_refuses_several_groups() {
    let config = kcoord_server::Config::parse(
        "topology-svg",
        "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
         offsets.topic.num.partitions=2\ngroup.streams.initial.rebalance.delay.ms=0\n\
         group.streams.topology.description.class=memory\n",
    )
    .unwrap();
    let server = kcoord_server::start(config).await.unwrap();
    let bootstrap = server.broker_addr().unwrap().to_string();
    let client = Client::connect(&bootstrap, ClientConfig::new("topology-svg"))
        .await
        .unwrap();
    let topic = NewTopic {
        name: "orders".into(),
        num_partitions: 1,
        replication_factor: -1,
        configs: vec![],
    };
    client.create_topics(&[topic], false).await.unwrap();

    let member_of = |group: &str, push: bool| {
        let topology = TopologyBuilder::stateless(1, ["orders"]).build().unwrap();
        let config = StreamsMemberConfig::new(group, topology)
            .with_topology_description(&description())
            .unwrap()
            .with_topology_description_push(push);
        StreamsMember::start(&client, config)
    };
    let member = member_of("svg-app", true);
    member
        .wait_for(
            |s| {
                s.last_topology_push
                    .as_ref()
                    .is_some_and(|p| p.result == PushResult::Stored)
            },
            WAIT,
        )
        .await
        .expect("the description is stored");

    let svg_of = |group: &'static str| {
        let bootstrap = bootstrap.clone();
        async move {
            tool(&[
                "--bootstrap-server",
                &bootstrap,
                "--describe",
                "--topology",
                "--group",
                group,
                "--output",
                "svg",
            ])
            .await
        }
    };
    let out = svg_of("svg-app").await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let svg = text(&out.stdout);
    let doc = roxmltree::Document::parse(&svg).expect("stdout is one SVG document");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let drawn: BTreeSet<(String, String)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .map(|n| {
            (
                n.attribute("data-kind").unwrap_or_default().to_string(),
                n.attribute("data-name").unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(drawn, expected());
    let boxes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cluster"))
        .count();
    assert_eq!(boxes, 3, "two sub-topologies and a global store");

    // A group without a description: the reason goes to stderr, stdout stays empty.
    let second = member_of("svg-other", false);
    second
        .wait_for(|s| s.member_epoch > 0, WAIT)
        .await
        .expect("the second group exists");
    let missing = svg_of("svg-other").await;
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(text(&missing.stdout), "");
    assert_eq!(
        text(&missing.stderr),
        "Error: No topology description has been recorded for group 'svg-other'.\n"
    );

    // Two groups: an SVG file holds one drawing, so --all-groups is refused before anything
    // is drawn.
    let all = tool(&[
        "--bootstrap-server",
        &bootstrap,
        "--describe",
        "--topology",
        "--all-groups",
        "--output",
        "svg",
    ])
    .await;
    assert_eq!(all.status.code(), Some(1));
    assert_eq!(text(&all.stdout), "");
    assert_eq!(
        text(&all.stderr),
        "Error: Option [output] svg draws the topology of one group, but 2 groups were given: \
         describe them one --group at a time (an SVG document holds one drawing).\n"
    );

    second.leave().await.unwrap();
    member.leave().await.unwrap();
    server.shutdown().await;
}
