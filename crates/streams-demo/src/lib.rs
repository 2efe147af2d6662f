//! `kcoord-streams-demo`: simulated Kafka Streams application instances for demos and tests.
//!
//! Each member joins the streams group with the assignment topology derived from a JSON
//! topology description (the format of [`kcoord_client::topology::streams`], e.g.
//! `examples/orders.json`), follows its assignment, and pushes the description when the
//! coordinator asks (KIP-1331: heartbeat v2 + UpdateStreamsGroupTopologyDescription, or
//! heartbeat v1 + StreamsGroupTopologyDescriptionUpdate). Source topics are created first
//! when missing. Every event is one line on stdout; logs go to stderr (`RUST_LOG`, default
//! `warn`).
//!
//! Exit codes: 0 after Ctrl-C or `--run-for`; 2 for a bad command line or topology file; 1
//! when the server cannot be reached or every member failed. Errors are one `Error: ...` line
//! on stderr.

pub mod app_topology;
pub mod events;
pub mod options;
mod run;

use std::ffi::OsString;
use std::io::Write;

pub use options::{parse, Options, Parsed, USAGE_EXIT};
pub use run::{run, SimError};

/// The whole program: parses `args` (program name first), runs until Ctrl-C or `--run-for`,
/// and returns the exit code.
pub fn main_with<I, T>(args: I, out: &mut (dyn Write + Send), err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let options = match parse(args) {
        Parsed::Run(options) => options,
        Parsed::Print(text) => {
            let _ = write!(out, "{text}");
            return 0;
        }
        Parsed::Usage(line) => {
            let _ = writeln!(err, "{line}");
            return USAGE_EXIT;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(err, "Error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let ctrl_c = async {
        // Without a signal handler the run ends only by --run-for.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    match runtime.block_on(run(&options, out, ctrl_c)) {
        Ok(()) => 0,
        Err(e) => {
            let _ = out.flush();
            let _ = writeln!(err, "Error: {e}");
            match e {
                SimError::Topology(_) => USAGE_EXIT,
                _ => 1,
            }
        }
    }
}
