//! Logs go to stderr (stdout carries only the startup line), filtered by `RUST_LOG` when set,
//! else by `log.level`.
//!
//! Lines are handed to a writer thread through a bounded queue and never written by the thread
//! that logs them: a slow or stalled stderr (a full pipe nobody reads, a paused terminal) must
//! not stall a request that logs while it holds a coordinator shard's lock. When the queue is
//! full, lines are dropped rather than waited for.

use std::fmt;
use std::io::IsTerminal;

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUED_LINES: usize = 64 * 1024;

/// Installs the subscriber. Keep the returned guard until the process ends: dropping it flushes
/// the queued lines and stops the writer thread.
pub fn init(log_level: &str) -> Option<WorkerGuard> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .unwrap_or_else(|e| {
                eprintln!("warning: ignoring RUST_LOG={directives:?}: {e}");
                EnvFilter::new(log_level)
            }),
        _ => EnvFilter::new(log_level),
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("kcoord-log-writer")
        .finish(std::io::stderr());
    // Another subscriber may already be installed (tests); keep it.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .ok()
        .map(|()| guard)
}

/// Most characters of a client-supplied string (a topic or group name, a client id) that a log
/// line carries: names have no length limit on the wire, log lines should.
pub const MAX_LOGGED_CHARS: usize = 256;

/// Displays at most [`MAX_LOGGED_CHARS`] characters of `s`, then how much was left out.
pub fn capped(s: &str) -> Capped<'_> {
    Capped(s)
}

pub struct Capped<'a>(&'a str);

impl fmt::Display for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(MAX_LOGGED_CHARS) {
            None => f.write_str(self.0),
            Some((cut, _)) => write!(f, "{}… ({} more bytes)", &self.0[..cut], self.0.len() - cut),
        }
    }
}

impl fmt::Debug for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_logged_whole() {
        assert_eq!(capped("orders").to_string(), "orders");
        let exact = "é".repeat(MAX_LOGGED_CHARS);
        assert_eq!(capped(&exact).to_string(), exact);
    }

    #[test]
    fn long_names_are_cut_at_a_character_boundary_with_the_rest_counted() {
        let long = "é".repeat(MAX_LOGGED_CHARS + 10);
        let shown = capped(&long).to_string();
        assert!(shown.starts_with(&"é".repeat(MAX_LOGGED_CHARS)));
        assert!(shown.ends_with("… (20 more bytes)"), "{shown}");
        assert_eq!(
            shown.chars().filter(|c| *c == 'é').count(),
            MAX_LOGGED_CHARS
        );
    }
}
