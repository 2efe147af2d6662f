//! `kcoord-admin brokers`: register a broker with a controller, or show the registrations.
//!
//! ```text
//! kcoord-admin brokers --register --config broker.properties --bootstrap-controller HOST:PORT [--once]
//! kcoord-admin brokers --describe [--static-configs] --bootstrap-server HOST:PORT
//! ```
//!
//! `--register` does what a Kafka broker does at startup (KIP-1326): reads the properties,
//! sends BrokerRegistration at the highest version both sides know with the non-sensitive
//! static configs (v6), then heartbeats. It prints one line when registered and one when the
//! controller unfences the broker, and keeps heartbeating until SIGINT/SIGTERM, when it asks
//! the controller for a controlled shutdown. With `--once` it exits as soon as the broker is
//! unfenced, without a shutdown: the registration stays, and the controller fences the broker
//! when its session expires (`broker.session.timeout.ms`).
//!
//! `--describe` prints the brokers DescribeCluster reports at the bootstrap listener, fenced
//! ones included, with the kcoord node itself marked as the controller; `--static-configs`
//! adds a second table with the static configs each registered broker reported, as
//! DescribeConfigs returns them (a null value prints as `null`).
//!
//! Exit status: 0 on success, 1 when the command failed (one `Error: ...` line on stderr),
//! 2 for a usage error.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use kcoord_client::admin::{ClusterDescription, ConfigEntry};
use kcoord_client::broker::{register_broker, BrokerHandle, BrokerProperties, RegistrationOptions};
use kcoord_client::{Client, ClientConfig};

use crate::table;

#[derive(Debug, Parser)]
#[command(
    name = "kcoord-admin",
    version,
    after_help = crate::command_config::HELP,
    about = "Administer a kcoord node: broker registrations and their static configs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Register a broker (KIP-1326), or describe the registered brokers.
    #[command(after_help = crate::command_config::HELP)]
    Brokers(BrokersArgs),
}

#[derive(Debug, Args)]
struct BrokersArgs {
    /// Register the broker described by --config with the controller at --bootstrap-controller.
    #[arg(long, conflicts_with = "describe", requires_all = ["config", "bootstrap_controller"])]
    register: bool,
    /// Print the registered brokers.
    #[arg(long, requires = "bootstrap_server")]
    describe: bool,
    /// The broker's server.properties (node.id, listeners, broker.rack, ...).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The controller listener to register with.
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap_controller: Option<String>,
    /// The broker listener to describe the cluster through.
    #[arg(long, value_name = "HOST:PORT")]
    bootstrap_server: Option<String>,
    /// With --describe: also print every registered broker's static configs.
    #[arg(long, requires = "describe")]
    static_configs: bool,
    /// With --register: exit once the broker is unfenced, without shutting it down.
    #[arg(long, requires = "register")]
    once: bool,
    /// With --register: the cluster id (default: cluster.id in --config, else the controller's).
    #[arg(long, value_name = "ID", requires = "register")]
    cluster_id: Option<String>,
    /// How long to wait for each step (registration, unfencing, shutdown, each request).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// Client properties for the connection (client.id, security.protocol with its sasl.* and
    /// ssl.* keys; see below).
    #[arg(long, value_name = "FILE")]
    command_config: Option<String>,
}

impl BrokersArgs {
    /// The client settings: `--command-config`, with `--timeout-ms` for requests and connecting.
    fn client_config(&self) -> Result<ClientConfig, Failure> {
        let timeout = Duration::from_millis(self.timeout_ms);
        let (config, _) =
            crate::command_config::load("kcoord-admin", self.command_config.as_deref(), &[])
                .map_err(Failure::Other)?;
        Ok(config
            .with_request_timeout(timeout)
            .with_connect_timeout(timeout))
    }
}

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Broker(#[from] kcoord_client::broker::BrokerError),
    #[error("{0}")]
    Client(#[from] kcoord_client::ClientError),
    #[error("{0}")]
    Other(String),
}

/// Runs the tool with `args` (program name first) and returns the exit status.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let help = matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            );
            let _ = if help {
                write!(out, "{e}")
            } else {
                write!(err, "{e}")
            };
            return if help { 0 } else { 2 };
        }
    };
    let Command::Brokers(args) = cli.command;
    if !args.register && !args.describe {
        let _ = writeln!(err, "error: brokers needs one of --register or --describe\n\nFor more information, try '--help'.");
        return 2;
    }
    let outcome = crate::runtime()
        .map_err(|e| Failure::Other(format!("cannot start the async runtime: {e}")))
        .and_then(|runtime| {
            runtime.block_on(async {
                if args.register {
                    register(&args, out).await
                } else {
                    describe(&args, out).await
                }
            })
        });
    let code = match outcome {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(err, "Error: {e}");
            1
        }
    };
    let _ = out.flush();
    code
}

fn say(out: &mut dyn Write, line: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    out.write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Other(e.to_string()))
}

async fn register(args: &BrokersArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let timeout = Duration::from_millis(args.timeout_ms);
    let (Some(path), Some(controller)) =
        (args.config.as_ref(), args.bootstrap_controller.as_deref())
    else {
        return Err(Failure::Other(
            "--register needs --config and --bootstrap-controller".into(),
        ));
    };
    let properties = BrokerProperties::load(path)?;
    let interrupts = Interrupts::install();
    let options = RegistrationOptions {
        client: args.client_config()?,
        cluster_id: args.cluster_id.clone(),
        ..Default::default()
    };
    let broker = tokio::time::timeout(timeout, register_broker(&properties, controller, options))
        .await
        .map_err(|_| {
            Failure::Other(format!(
                "the controller at {controller} did not answer within {timeout:?}"
            ))
        })??;
    say(
        out,
        format_args!(
            "Registered broker {} with broker epoch {} (BrokerRegistration v{}, {} static configs sent).",
            broker.broker_id,
            broker.epoch,
            broker.version,
            broker.static_configs_sent().len()
        ),
    )?;
    let handle = broker.start_heartbeats();
    handle.wait_unfenced(timeout).await?;
    say(
        out,
        format_args!("Broker {} is unfenced.", handle.broker_id()),
    )?;
    if args.once {
        // Dropping the handle stops the heartbeats without a shutdown, as a stopped broker
        // process would: the registration (and its static configs) stays.
        return Ok(());
    }
    heartbeat_until_stopped(handle, interrupts, timeout, out).await
}

/// Heartbeats until SIGINT or SIGTERM (then a controlled shutdown) or until the controller
/// stops answering for this incarnation.
async fn heartbeat_until_stopped(
    handle: BrokerHandle,
    interrupts: Interrupts,
    timeout: Duration,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let mut status = handle.subscribe();
    let stopped = async move {
        // Ends when the heartbeat task stops on its own (e.g. STALE_BROKER_EPOCH).
        let _ = status.wait_for(|s| s.stopped).await;
    };
    tokio::select! {
        () = interrupts.recv() => {
            let id = handle.broker_id();
            handle.shut_down(timeout).await?;
            say(out, format_args!("Broker {id} shut down."))
        }
        () = stopped => {
            let last = handle.status();
            Err(Failure::Other(format!(
                "broker {} stopped heartbeating: {}",
                handle.broker_id(),
                last.last_error.unwrap_or_else(|| "the controller told it to shut down".into())
            )))
        }
    }
}

/// SIGINT/SIGTERM listeners, installed when created: a signal that arrives after this point
/// (e.g. right after the "unfenced" line a supervisor waits for) is seen, never the default
/// action that would kill the process without a controlled shutdown.
struct Interrupts {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Self {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    async fn recv(self) {
        #[cfg(unix)]
        {
            async fn next(signal: Option<tokio::signal::unix::Signal>) {
                match signal {
                    Some(mut signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                () = next(self.interrupt) => {}
                () = next(self.terminate) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn describe(args: &BrokersArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let timeout = Duration::from_millis(args.timeout_ms);
    let Some(bootstrap) = args.bootstrap_server.as_deref() else {
        return Err(Failure::Other("--describe needs --bootstrap-server".into()));
    };
    let work = async {
        let client = Client::connect(bootstrap, args.client_config()?).await?;
        let cluster = client.describe_brokers(true).await?;
        let mut configs = Vec::new();
        if args.static_configs {
            for broker in cluster
                .brokers
                .iter()
                .filter(|b| b.id != cluster.controller_id)
            {
                configs.push((broker.id, client.describe_broker_configs(broker.id).await?));
            }
        }
        Ok::<_, Failure>((cluster, configs))
    };
    let (cluster, configs) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| Failure::Other(format!("no answer from {bootstrap} within {timeout:?}")))??;
    let text = format_brokers(&cluster, args.static_configs.then_some(&configs[..]));
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::Other(e.to_string()))
}

/// The `--describe` output: the brokers table, then (with `--static-configs`) the configs
/// table after an empty line.
pub fn format_brokers(
    cluster: &ClusterDescription,
    configs: Option<&[(i32, Vec<ConfigEntry>)]>,
) -> String {
    let rows: Vec<Vec<String>> = cluster
        .brokers
        .iter()
        .map(|b| {
            vec![
                b.id.to_string(),
                b.host.clone(),
                b.port.to_string(),
                b.rack.clone().unwrap_or_else(|| "-".into()),
                if b.id == cluster.controller_id {
                    "controller"
                } else {
                    "broker"
                }
                .to_string(),
                b.fenced.to_string(),
            ]
        })
        .collect();
    let mut text = table::render(&["BROKER", "HOST", "PORT", "RACK", "ROLE", "FENCED"], &rows);
    if let Some(configs) = configs {
        let rows: Vec<Vec<String>> = configs
            .iter()
            .flat_map(|(id, entries)| {
                entries.iter().map(move |c| {
                    vec![
                        id.to_string(),
                        c.name.clone(),
                        c.value.clone().unwrap_or_else(|| "null".into()),
                        c.source.name(),
                    ]
                })
            })
            .collect();
        text.push('\n');
        text.push_str(&table::render(
            &["BROKER", "CONFIG", "VALUE", "SOURCE"],
            &rows,
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_client::admin::{BrokerDescription, ConfigSource};

    fn run_args(args: &[&str]) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            std::iter::once("kcoord-admin").chain(args.iter().copied()),
            &mut out,
            &mut err,
        );
        (
            code,
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    }

    #[test]
    fn usage_errors_exit_2() {
        let (code, out, err) = run_args(&["brokers"]);
        assert_eq!((code, out.as_str()), (2, ""));
        assert!(
            err.starts_with("error: brokers needs one of --register or --describe"),
            "{err}"
        );
        let (code, _, err) = run_args(&["brokers", "--register", "--config", "b.properties"]);
        assert_eq!(code, 2);
        assert!(err.contains("--bootstrap-controller"), "{err}");
        let (code, _, err) = run_args(&["brokers", "--describe"]);
        assert_eq!(code, 2);
        assert!(err.contains("--bootstrap-server"), "{err}");
        assert_eq!(
            run_args(&[
                "brokers",
                "--describe",
                "--once",
                "--bootstrap-server",
                "h:1"
            ])
            .0,
            2
        );
        assert_eq!(run_args(&["--help"]).0, 0);
    }

    #[test]
    fn the_describe_tables() {
        let broker = |id: i32, port: i32, rack: Option<&str>, fenced: bool| BrokerDescription {
            id,
            host: "127.0.0.1".into(),
            port,
            rack: rack.map(str::to_owned),
            fenced,
        };
        let cluster = ClusterDescription {
            cluster_id: "c".into(),
            controller_id: 1,
            brokers: vec![
                broker(1, 9092, None, false),
                broker(4, 19092, Some("rack-a"), true),
            ],
        };
        let entry = |name: &str, value: Option<&str>| ConfigEntry {
            name: name.into(),
            value: value.map(str::to_owned),
            source: ConfigSource::StaticBrokerConfig,
            read_only: true,
            sensitive: false,
        };
        let configs = vec![(
            4,
            vec![entry("broker.rack", Some("rack-a")), entry("log.dir", None)],
        )];
        assert_eq!(
            format_brokers(&cluster, Some(&configs)),
            "\
BROKER  HOST       PORT   RACK    ROLE        FENCED
1       127.0.0.1  9092   -       controller  false
4       127.0.0.1  19092  rack-a  broker      true

BROKER  CONFIG       VALUE   SOURCE
4       broker.rack  rack-a  STATIC_BROKER_CONFIG
4       log.dir      null    STATIC_BROKER_CONFIG
"
        );
        assert!(!format_brokers(&cluster, None).contains("CONFIG"));
    }
}
