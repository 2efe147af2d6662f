//! `kcoord <path/to/server.properties>`.

use std::cell::Cell;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use tracing::{debug, error, info, warn};

use crate::config::{Config, ConfigWarning};
use crate::daemon as server;
use crate::runtime::topology_plugin::PluginStartError;
use crate::support::logging;

/// Exit status for a bad config file or bad arguments (clap uses 2 as well).
const EXIT_CONFIG: u8 = 2;
/// Exit status when the daemon cannot start, e.g. a port is taken.
const EXIT_START: u8 = 1;

/// A Kafka-protocol-compatible streams group coordinator.
///
/// Kafka Streams clients, admin clients and brokers connect to it as to an Apache Kafka broker
/// or KRaft controller. Once every listener is bound it prints one line to stdout:
/// `kcoord started: node.id=<id> listeners=<NAME>://<host>:<port>,...`. SIGINT or SIGTERM stop
/// it gracefully. Logs go to stderr; RUST_LOG overrides the log.level key.
#[derive(Debug, Parser)]
#[command(name = "kcoord", version)]
struct Args {
    /// The configuration file (Java properties syntax; see config/README.md).
    config: PathBuf,
}

pub fn daemon_main() -> ExitCode {
    daemon_main_with(|| {})
}

/// [`daemon_main`] with `on_idle`, which each runtime worker thread calls when it has nothing to
/// do (tokio's `on_thread_park`); the binary hands its allocator's collection in, at most one
/// per thread per second.
pub fn daemon_main_with(on_idle: fn()) -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            // --help and --version end up here too, with status 0.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_CONFIG));
        }
    };
    let config = match Config::load(&args.config) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // Held to the end of main: dropping it flushes the lines still queued.
    let _log_writer = logging::init(&config.log_level);
    std::panic::set_hook(logging::panic_hook());
    log_warnings(&config);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(move || idle_at_most_every_second(on_idle))
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_START);
        }
    };
    runtime.block_on(run(config))
}

fn log_warnings(config: &Config) {
    for w in &config.warnings {
        match w {
            ConfigWarning::UnknownKey { key, line } => {
                warn!(file = %config.source, line, key = %key, "unknown configuration key; ignored")
            }
            ConfigWarning::Overridden {
                key,
                first_line,
                line,
            } => {
                warn!(file = %config.source, line, first_line, key = %key, "configuration key set twice; the later value wins")
            }
        }
    }
}

/// Raises the open-file limit to its hard maximum, as Kafka's start scripts expect operators
/// to: on disk every partition keeps its active segment open.
fn raise_open_file_limit() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => debug!(open_files = ?limit.maximum, "raised the open file limit"),
                Err(e) => warn!(error = %e, "could not raise the open file limit"),
            }
        }
    }
}

async fn run(config: Config) -> ExitCode {
    raise_open_file_limit();
    // Handlers go in before the listeners open, so a signal during startup is not lost
    // (a background job of a non-interactive shell starts with SIGINT ignored).
    let signals = match Signals::new() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("error: cannot install signal handlers: {e}");
            return ExitCode::from(EXIT_START);
        }
    };
    let node_id = config.node_id;
    let cluster_id = config.cluster_id.clone();
    let handle = match server::start(config).await {
        Ok(handle) => handle,
        Err(e @ server::StartError::Plugin(PluginStartError::Config { .. })) => {
            // A plugin that rejects its settings is a configuration error, reported like a bad
            // key: one line, status 2.
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
        Err(e) => {
            error!(error = %e, "startup failed");
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_START);
        }
    };
    info!(node_id, cluster_id = %cluster_id, version = env!("CARGO_PKG_VERSION"), "kcoord started");
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", handle.startup_line());
    let _ = stdout.flush();
    drop(stdout);

    let signal = signals.recv().await;
    info!(
        signal,
        "shutting down: no new connections, finishing requests in flight"
    );
    handle.shutdown().await;
    info!("stopped");
    ExitCode::SUCCESS
}

/// SIGINT and SIGTERM; and SIGXFSZ, caught so that a write past the file size limit fails
/// with EFBIG (answered KAFKA_STORAGE_ERROR) instead of killing the daemon.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(target_os = "linux")]
    _file_size: tokio::signal::unix::Signal,
}

/// Linux's SIGXFSZ.
#[cfg(target_os = "linux")]
const SIGXFSZ: i32 = 25;

impl Signals {
    fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
                #[cfg(target_os = "linux")]
                _file_size: signal(SignalKind::from_raw(SIGXFSZ))?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// Resolves on the first signal and names it.
    async fn recv(mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "ctrl-c"
        }
    }
}

/// Runs `on_idle` if this thread has not run it within the last second.
fn idle_at_most_every_second(on_idle: fn()) {
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    if LAST.with(|last| due(last, Instant::now())) {
        on_idle();
    }
}

/// Whether a second has passed since `last` (or nothing ran yet); if so, `last` becomes `now`.
fn due(last: &Cell<Option<Instant>>, now: Instant) -> bool {
    let due = last
        .get()
        .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(1));
    if due {
        last.set(Some(now));
    }
    due
}

#[cfg(test)]
mod idle_tests {
    use super::*;

    #[test]
    fn the_idle_hook_runs_at_most_once_a_second_per_thread() {
        let last = Cell::new(None);
        let t0 = Instant::now();
        assert!(due(&last, t0), "the first idle moment runs it");
        assert!(!due(&last, t0 + Duration::from_millis(999)));
        assert!(due(&last, t0 + Duration::from_secs(1)));
        assert!(
            !due(&last, t0 + Duration::from_millis(1500)),
            "counted from the last run"
        );
        assert!(due(&last, t0 + Duration::from_secs(2)));
    }
}
