//! `config/secured.properties` works as docs/operations.md ("Running locked down") writes it:
//! its certificate commands (OpenSSL) run in a scratch directory, the daemon starts with the file (its ports
//! made free, its relative paths pointed at that directory), the admin logs in with PLAIN over
//! TLS and creates a SCRAM user and an ACL, the user logs in with SCRAM-SHA-512 and gets
//! exactly what the ACL gives, a client without SASL gets nothing, and a broker's certificate
//! opens the controller listener while a certificate-less client is refused there.

mod security_support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use kcoord_sasl::ScramMechanism;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kcoord_wire::messages::create_acls_request::AclCreation;
use kcoord_wire::messages::*;
use kcoord_wire::ErrorCode;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use security_support::{scram, Client};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The certificate commands of docs/operations.md, "Running locked down".
fn certificate_commands() -> String {
    let guide = include_str!("../docs/operations.md");
    let block = guide
        .split("<!-- secured-certs:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- secured-certs:end -->").next())
        .expect("docs/operations.md has the secured-certs block");
    block
        .lines()
        .filter(|l| !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `config/secured.properties` as written, but on free ports and with its relative paths
/// under `dir` (where the commands ran).
fn secured_config(dir: &Path) -> String {
    let text = include_str!("../config/secured.properties");
    text.lines()
        .map(|line| {
            if line.starts_with("listeners=") {
                "listeners=SASL_SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0".to_owned()
            } else if let Some(value) = line.strip_prefix("log.dirs=") {
                assert!(value.starts_with("/tmp/"));
                format!("log.dirs={}", dir.join("data").display())
            } else {
                line.replace("config/certs/", &format!("{}/config/certs/", dir.display()))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tls_config(dir: &Path, client_certificate: Option<&str>) -> Arc<rustls::ClientConfig> {
    let certs = dir.join("config/certs");
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(certs.join("ca.pem")).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client_certificate {
        Some(name) => {
            let pem = certs.join(format!("{name}.pem"));
            let chain = CertificateDer::pem_file_iter(&pem)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(&pem).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

async fn connect_tls(
    addr: std::net::SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<Client<TlsStream<TcpStream>>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    let stream = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await?;
    Ok(Client::over(stream))
}

fn acl(principal: &str, topic: &str) -> AclCreation {
    AclCreation {
        resource_type: 2,
        resource_name: topic.into(),
        resource_pattern_type: 3,
        principal: principal.into(),
        host: "*".into(),
        operation: 8, // DESCRIBE
        permission_type: 3,
        ..Default::default()
    }
}

/// Metadata for `topic`: its error code.
async fn metadata(client: &mut Client<TlsStream<TcpStream>>, topic: &str) -> Option<i16> {
    let request = MetadataRequest {
        topics: Some(vec![metadata_request::MetadataRequestTopic {
            name: Some(topic.into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let response: MetadataResponse = client.send(ApiKey::Metadata, 12, &request).await?;
    Some(response.topics[0].error_code)
}

#[tokio::test]
async fn the_secured_example_config_works_as_the_operations_guide_says() {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{}", certificate_commands()))
        .current_dir(dir.path())
        .output()
        .expect("bash runs");
    assert!(
        made.status.success(),
        "the certificate commands of docs/operations.md failed: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let config = kcoord_server::Config::parse("secured.properties", &secured_config(dir.path()))
        .unwrap_or_else(|e| panic!("{e}"));
    let server = kcoord_server::start(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sasl_ssl = server.local_addr("SASL_SSL").unwrap();
    let controller = server.local_addr("CONTROLLER").unwrap();
    let tls = tls_config(dir.path(), None);

    // The admin: PLAIN over TLS, a super user.
    let mut admin = connect_tls(sasl_ssl, Arc::clone(&tls)).await.unwrap();
    let login = admin.plain("admin", "admin-secret").await.unwrap();
    assert_eq!(login.error_code, 0, "{:?}", login.error_message);
    let salt = b"salt-of-alice".to_vec();
    let salted =
        kcoord_sasl::salted_password(ScramMechanism::ScramSha512, "alice-secret", &salt, 4096);
    let user = AlterUserScramCredentialsRequest {
        upsertions: vec![ScramCredentialUpsertion {
            name: "alice".into(),
            mechanism: 2,
            iterations: 4096,
            salt: salt.into(),
            salted_password: salted.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let created: AlterUserScramCredentialsResponse = admin
        .send(ApiKey::AlterUserScramCredentials, 0, &user)
        .await
        .unwrap();
    assert_eq!(created.results[0].error_code, 0);
    let acls = CreateAclsRequest {
        creations: vec![acl("User:alice", "orders")],
        ..Default::default()
    };
    let granted: CreateAclsResponse = admin.send(ApiKey::CreateAcls, 3, &acls).await.unwrap();
    assert_eq!(granted.results[0].error_code, 0);

    // alice: SCRAM-SHA-512, DESCRIBE on orders and nothing else.
    let mut alice = connect_tls(sasl_ssl, Arc::clone(&tls)).await.unwrap();
    let login = scram(
        &mut alice,
        ScramMechanism::ScramSha512,
        "alice",
        "alice-secret",
    )
    .await;
    assert_eq!(login.error_code, 0, "{:?}", login.error_message);
    assert_eq!(
        metadata(&mut alice, "orders").await,
        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()),
        "alice may describe orders (which does not exist)"
    );
    assert_eq!(
        metadata(&mut alice, "payments").await,
        Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED.code())
    );

    // Without SASL nothing is served on the client listener.
    let mut anonymous = connect_tls(sasl_ssl, Arc::clone(&tls)).await.unwrap();
    assert_eq!(metadata(&mut anonymous, "orders").await, None);

    // The controller listener: a broker's certificate (User:broker, a super user) gets in; a
    // client without a certificate does not.
    let mut broker = connect_tls(controller, tls_config(dir.path(), Some("broker")))
        .await
        .unwrap();
    let cluster: DescribeClusterResponse = broker
        .send(
            ApiKey::DescribeCluster,
            1,
            &DescribeClusterRequest {
                endpoint_type: 2,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(cluster.error_code, 0, "{:?}", cluster.error_message);
    let refused = match connect_tls(controller, tls).await {
        Err(_) => true,
        Ok(mut client) => client
            .send::<_, DescribeClusterResponse>(
                ApiKey::DescribeCluster,
                1,
                &DescribeClusterRequest {
                    endpoint_type: 2,
                    ..Default::default()
                },
            )
            .await
            .is_none(),
    };
    assert!(
        refused,
        "the controller listener served a client without a certificate"
    );
    server.shutdown().await;
}
