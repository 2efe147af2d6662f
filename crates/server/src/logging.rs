//! Logs go to stderr (stdout carries only the startup line), filtered by `RUST_LOG` when set,
//! else by `log.level`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub fn init(log_level: &str) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => {
            EnvFilter::try_new(crate::config::tidy_directives(&directives)).unwrap_or_else(|e| {
                eprintln!("warning: ignoring RUST_LOG={directives:?}: {e}");
                EnvFilter::new(log_level)
            })
        }
        _ => EnvFilter::new(log_level),
    };
    // Another subscriber may already be installed (tests); keep it.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
