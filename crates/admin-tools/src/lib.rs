//! Command-line tools on top of `kcoord-client`:
//!
//! - `kcoord-admin` ([`admin`]): `brokers --register` registers a broker described by a
//!   `server.properties` file with a controller and heartbeats for it (KIP-1326, the static
//!   configs without the sensitive ones); `brokers --describe [--static-configs]` prints the
//!   registrations and the static configs the controller keeps for them.
//! - `kafka-topics` ([`topics`]): Kafka's tool, `--list [--exclude-internal] [--topic REGEX]`,
//!   which lists with ListTopics (KIP-142) when the server offers it and with Metadata
//!   otherwise.
//! - `kafka-acls` ([`acls`]): Kafka's `AclCommand`: `--add`, `--remove`, `--list` with its
//!   resource, principal, host and operation options and the `--producer` / `--consumer`
//!   expansions, over CreateAcls, DeleteAcls and DescribeAcls.
//! - `kafka-console-producer` ([`console_producer`]) and `kafka-console-consumer`
//!   ([`console_consumer`]): Kafka's console tools, lines from stdin as records and records
//!   to stdout, with the client's `Producer` and `Consumer` (no consumer group).
//!
//! Every tool takes `--command-config FILE` ([`command_config`]): `client.id`, timeouts and
//! `security.protocol` with its `sasl.*` and `ssl.*` keys.

pub mod acls;
pub mod admin;
pub mod command_config;
mod console;
pub mod console_consumer;
pub mod console_producer;
pub mod table;
pub mod topics;

/// Logs (WARN and up unless `RUST_LOG` says otherwise) go to stderr, so stdout stays the
/// tool's output.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// A current-thread runtime for one command.
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
