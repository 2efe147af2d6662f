//! `kcoord-streams-demo`: see the `kcoord_streams_demo` library.

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    // Logs go to stderr so that stdout carries the event lines only.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let code = kcoord_streams_demo::main_with(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
