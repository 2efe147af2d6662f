//! `kafka-acls` and `kafka-topics` with `--command-config` against a kcoord node in this
//! process whose broker listener is SASL_PLAINTEXT (PLAIN and SCRAM-SHA-512) with the
//! StandardAuthorizer: ACLs added, listed and removed as a PLAIN super user and as a SCRAM user
//! granted cluster ALTER, and a wrong password failing with a clear message and status 1.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use kcoord_client::admin::NewTopic;
use kcoord_client::{Client, ClientConfig};
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::AlterUserScramCredentialsRequest;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const WAIT: Duration = Duration::from_secs(30);
const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

struct Node {
    handle: kcoord_server::ServerHandle,
    broker: String,
    dir: tempfile::TempDir,
}

impl Node {
    async fn start() -> Node {
        let text = format!(
            "node.id=1\nlisteners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n\
             listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             offsets.topic.num.partitions=1\n\
             sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
             listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required user_alice=\"alice-secret\" user_bob=\"bob-secret\";\n\
             listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} required;\n\
             authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
             super.users=User:alice\n"
        );
        let config =
            kcoord_server::Config::parse("acls-test", &text).unwrap_or_else(|e| panic!("{e}"));
        let handle = kcoord_server::start(config)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let broker = handle.broker_addr().expect("broker listener").to_string();
        Node {
            handle,
            broker,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A `--command-config` file for `user` with this mechanism and JAAS login module.
    fn command_config(&self, mechanism: &str, user: &str, password: &str) -> String {
        let module = if mechanism == "PLAIN" {
            PLAIN_MODULE
        } else {
            SCRAM_MODULE
        };
        let path: PathBuf = self
            .dir
            .path()
            .join(format!("{user}-{mechanism}.properties"));
        std::fs::write(
            &path,
            format!(
                "# written by the test\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n\
                 sasl.jaas.config={module} required \\\n    username=\"{user}\" password=\"{password}\";\n"
            ),
        )
        .unwrap();
        path.display().to_string()
    }

    /// A client of alice, the super user.
    async fn alice(&self) -> Client {
        let config = ClientConfig::from_properties(
            "acls-test",
            [
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN"),
                ("sasl.username", "alice"),
                ("sasl.password", "alice-secret"),
            ],
        )
        .unwrap();
        Client::connect(&self.broker, config).await.unwrap()
    }
}

async fn tool(binary: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run the binary");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{binary} {args:?} did not finish"))
        .unwrap()
}

/// (exit status, stdout, stderr) of `kafka-acls --bootstrap-server B --command-config C ...`.
async fn kafka_acls(
    node: &Node,
    config: &str,
    args: &[&str],
    stdin: &[u8],
) -> (Option<i32>, String, String) {
    let mut all = vec![
        "--bootstrap-server",
        &node.broker,
        "--command-config",
        config,
    ];
    all.extend_from_slice(args);
    outcome(tool(env!("CARGO_BIN_EXE_kafka-acls"), &all, stdin).await)
}

async fn kafka_topics(node: &Node, config: &str) -> (Option<i32>, String, String) {
    let args = [
        "--bootstrap-server",
        &node.broker,
        "--command-config",
        config,
        "--list",
    ];
    outcome(tool(env!("CARGO_BIN_EXE_kafka-topics"), &args, b"").await)
}

fn outcome(output: Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const ORDERS: &str = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)";
const BOB_READS: &str = "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)";

#[tokio::test]
async fn a_plain_super_user_adds_lists_and_removes_acls_and_lists_topics() {
    let node = Node::start().await;
    let alice = node.command_config("PLAIN", "alice", "alice-secret");
    let grant = [
        "--add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--topic",
        "orders",
    ];
    let added = kafka_acls(&node, &alice, &grant, b"").await;
    assert_eq!(
        added,
        (
            Some(0),
            format!("Adding ACLs for resource `{ORDERS}`: \n \t{BOB_READS}\n\n"),
            String::new()
        )
    );
    let again = kafka_acls(&node, &alice, &grant, b"").await;
    assert_eq!(
        again.1,
        format!("Acl (pattern={ORDERS}, entry={BOB_READS}) already exists.\n")
    );
    let listed = kafka_acls(&node, &alice, &["--list", "--topic", "orders"], b"").await;
    assert_eq!(
        listed,
        (
            Some(0),
            format!("Current ACLs for resource `{ORDERS}`:\n\t{BOB_READS}\n\n"),
            String::new()
        )
    );
    let by_principal = kafka_acls(&node, &alice, &["--list", "--principal", "User:bob"], b"").await;
    assert_eq!(
        by_principal.1,
        format!("ACLs for principal `User:bob`\nCurrent ACLs for resource `{ORDERS}`:\n\t{BOB_READS}\n\n")
    );

    // bob is authenticated but may not describe ACLs.
    let bob = node.command_config("PLAIN", "bob", "bob-secret");
    let (code, out, _) = kafka_acls(&node, &bob, &["--list"], b"").await;
    assert_eq!(code, Some(1));
    assert!(
        out.starts_with(
            "Error while executing ACL command: DescribeAcls failed: CLUSTER_AUTHORIZATION_FAILED"
        ),
        "{out}"
    );

    let mut remove = grant.to_vec();
    remove[0] = "--remove";
    remove.push("--force");
    assert_eq!(
        kafka_acls(&node, &alice, &remove, b"").await,
        (Some(0), String::new(), String::new())
    );
    let listed = kafka_acls(&node, &alice, &["--list"], b"").await;
    assert_eq!(listed, (Some(0), String::new(), String::new()));

    let admin = node.alice().await;
    for result in admin
        .create_topics(&[NewTopic::new("orders", 1, 1)], false)
        .await
        .unwrap()
    {
        result.result.unwrap();
    }
    let topics = kafka_topics(&node, &alice).await;
    assert_eq!(topics.0, Some(0), "{topics:?}");
    assert!(topics.1.lines().any(|l| l == "orders"), "{topics:?}");
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_scram_sha_512_user_with_cluster_alter_manages_acls_and_answers_the_remove_prompt() {
    let node = Node::start().await;
    let admin = node.alice().await;
    let mechanism = kcoord_sasl::ScramMechanism::ScramSha512;
    let salt = b"acls-test-salt".to_vec();
    let upsert = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: "carol".into(),
            mechanism: mechanism.kafka_type(),
            iterations: 4096,
            salted_password: kcoord_sasl::salted_password(mechanism, "carol-secret", &salt, 4096)
                .into(),
            salt: salt.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let response = admin.bootstrap().send_negotiated(upsert).await.unwrap();
    assert_eq!(response.results[0].error_code, 0);

    let alice = node.command_config("PLAIN", "alice", "alice-secret");
    for grant in [
        &["--add", "--allow-principal", "User:carol", "--cluster"][..],
        &[
            "--add",
            "--allow-principal",
            "User:carol",
            "--operation",
            "Describe",
            "--topic",
            "*",
        ][..],
    ] {
        let (code, out, err) = kafka_acls(&node, &alice, grant, b"").await;
        assert_eq!(code, Some(0), "{out}{err}");
    }

    let carol = node.command_config("SCRAM-SHA-512", "carol", "carol-secret");
    let (code, out, _) = kafka_acls(
        &node,
        &carol,
        &[
            "--add",
            "--producer",
            "--topic",
            "audit",
            "--resource-pattern-type",
            "prefixed",
            "--allow-principal",
            "User:dave",
        ],
        b"",
    )
    .await;
    assert_eq!(code, Some(0), "{out}");
    let audit = "ResourcePattern(resourceType=TOPIC, name=audit, patternType=PREFIXED)";
    let dave =
        |op: &str| format!("(principal=User:dave, host=*, operation={op}, permissionType=ALLOW)");
    assert_eq!(
        out,
        format!(
            "Adding ACLs for resource `{audit}`: \n \t{}\n\t{}\n\t{}\n\n",
            dave("WRITE"),
            dave("CREATE"),
            dave("DESCRIBE")
        )
    );

    // MATCH lists what applies to a topic named audit-log: the PREFIXED ACLs above.
    let (_, listed, _) = kafka_acls(
        &node,
        &carol,
        &[
            "--list",
            "--topic",
            "audit-log",
            "--resource-pattern-type",
            "match",
        ],
        b"",
    )
    .await;
    assert_eq!(
        listed,
        format!(
            "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=*, patternType=LITERAL)`:\n\
             \t(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n\
             Current ACLs for resource `{audit}`:\n\t{}\n\t{}\n\t{}\n\n",
            dave("WRITE"),
            dave("CREATE"),
            dave("DESCRIBE")
        )
    );

    // --remove without --force asks; "n" keeps the ACLs, "y" removes them.
    let remove = [
        "--remove",
        "--topic",
        "audit",
        "--resource-pattern-type",
        "prefixed",
    ];
    let (code, out, _) = kafka_acls(&node, &carol, &remove, b"n\n").await;
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        format!("Are you sure you want to delete all ACLs for resource filter `{audit}`? (y/n)\n")
    );
    let (_, listed, _) = kafka_acls(
        &node,
        &carol,
        &[
            "--list",
            "--topic",
            "audit",
            "--resource-pattern-type",
            "prefixed",
        ],
        b"",
    )
    .await;
    assert!(listed.contains(&dave("WRITE")), "{listed}");
    let (code, _, _) = kafka_acls(&node, &carol, &remove, b"y\n").await;
    assert_eq!(code, Some(0));
    let (_, listed, _) = kafka_acls(
        &node,
        &carol,
        &[
            "--list",
            "--topic",
            "audit",
            "--resource-pattern-type",
            "prefixed",
        ],
        b"",
    )
    .await;
    assert_eq!(listed, "");

    for result in admin
        .create_topics(&[NewTopic::new("payments", 1, 1)], false)
        .await
        .unwrap()
    {
        result.result.unwrap();
    }
    let topics = kafka_topics(&node, &carol).await;
    assert_eq!(topics.0, Some(0), "{topics:?}");
    assert!(topics.1.lines().any(|l| l == "payments"), "{topics:?}");
    node.handle.shutdown().await;
}

#[tokio::test]
async fn a_wrong_password_is_a_clear_error_and_status_1() {
    let node = Node::start().await;
    let wrong = node.command_config("PLAIN", "alice", "not-the-password");
    let (code, out, _) = kafka_acls(&node, &wrong, &["--list"], b"").await;
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        format!(
            "Error while executing ACL command: SASL authentication with {} failed (PLAIN): SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password\n",
            node.broker
        )
    );
    let wrong = node.command_config("SCRAM-SHA-512", "nobody", "nothing");
    let (code, out, _) = kafka_topics(&node, &wrong).await;
    assert_eq!(code, Some(1));
    assert_eq!(
        out,
        format!(
            "Error while executing topic command : SASL authentication with {} failed (SCRAM-SHA-512): SASL_AUTHENTICATION_FAILED: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512\n",
            node.broker
        )
    );
    // A PLAINTEXT client at a SASL listener is not served.
    let plaintext = node.dir.path().join("plaintext.properties");
    std::fs::write(&plaintext, "security.protocol=PLAINTEXT\n").unwrap();
    let (code, _, _) = kafka_acls(&node, plaintext.to_str().unwrap(), &["--list"], b"").await;
    assert_eq!(code, Some(1));
    node.handle.shutdown().await;
}
