//! `--command-config` with SASL against the real daemon (in this process): a SASL_PLAINTEXT
//! listener with PLAIN, where `--list` shows the group of a member that joined over SASL, and
//! a wrong password is one `Error:` line with the server's reason and status 1.

use std::process::{Command, Output};
use std::time::Duration;

use kcoord_client::admin::NewTopic;
use kcoord_client::streams::{StreamsMember, StreamsMemberConfig, TopologyBuilder};
use kcoord_client::{Client, ClientConfig};

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

fn properties(user: &str, password: &str) -> String {
    format!(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config={PLAIN_MODULE} required username=\"{user}\" password=\"{password}\";\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_authenticates_with_the_command_configs_sasl_settings() {
    let config = kcoord_server::Config::parse(
        "streams-groups-sasl",
        &format!(
            "node.id=1\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
             listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             sasl.enabled.mechanisms=PLAIN\n\
             listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required user_ops=\"ops-secret\";\n\
             offsets.topic.num.partitions=1\ngroup.streams.initial.rebalance.delay.ms=0\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = kcoord_server::start(config).await.unwrap();
    let bootstrap = server.broker_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("ops.properties");
    std::fs::write(&good, properties("ops", "ops-secret")).unwrap();
    let bad = dir.path().join("wrong.properties");
    std::fs::write(&bad, properties("ops", "guess")).unwrap();

    let client_config = ClientConfig::from_properties(
        "streams-groups-sasl",
        [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "ops"),
            ("sasl.password", "ops-secret"),
        ],
    )
    .unwrap();
    let client = Client::connect(&bootstrap, client_config).await.unwrap();
    client
        .create_topics(&[NewTopic::new("orders", 1, 1)], false)
        .await
        .unwrap();
    let topology = TopologyBuilder::stateless(1, ["orders"]).build().unwrap();
    let member = StreamsMember::start(&client, StreamsMemberConfig::new("app", topology));
    member
        .wait_for(|s| s.member_epoch > 0, Duration::from_secs(20))
        .await
        .unwrap();

    let run = |config: std::path::PathBuf| {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || -> Output {
            Command::new(env!("CARGO_BIN_EXE_kafka-streams-groups"))
                .args([
                    "--bootstrap-server",
                    &bootstrap,
                    "--list",
                    "--command-config",
                ])
                .arg(config)
                .output()
                .unwrap()
        })
    };
    let listed = run(good).await.unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(stdout.lines().any(|l| l.trim() == "app"), "{stdout}");

    let refused = run(bad).await.unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        format!("Error: Executing streams group command failed due to SASL authentication with {bootstrap} failed (PLAIN): SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password\n")
    );
    member.leave().await.ok();
    server.shutdown().await;
}
