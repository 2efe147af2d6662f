//! The command line, and how a bad one is reported: one line on stderr, exit code 2.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::Parser;

/// Exit code of a bad command line (clap's convention).
pub const USAGE_EXIT: i32 = 2;

/// Simulated Kafka Streams application instances: each joins the streams group with the
/// topology of a JSON topology description, follows its assignment, and pushes the
/// description when the coordinator asks for it (KIP-1331). Prints one line per event.
#[derive(Debug, Clone, Parser)]
#[command(name = "kcoord-streams-demo", version)]
pub struct Options {
    /// The server to connect to (host:port[,host:port...]).
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap_server: String,

    /// The streams group (Kafka Streams' application.id).
    #[arg(long, value_name = "GROUP")]
    pub group: String,

    /// The topology description, as JSON (see examples/orders.json).
    #[arg(long, value_name = "FILE")]
    pub topology: PathBuf,

    /// How many members (application instances) to run.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub members: u32,

    /// Highest StreamsGroupHeartbeat version: 2 = the specification (TopologyDescriptionId,
    /// push with key 95), 1 = Kafka 4.4 (TopologyDescriptionRequired, push with key 93),
    /// 0 = Kafka 4.1-4.3 (never asked to push). Default: the highest the server offers.
    #[arg(long, value_name = "VERSION", value_parser = clap::value_parser!(i16).range(0..=2))]
    pub heartbeat_version: Option<i16>,

    /// Do not push the topology description (topology.description.push.enabled=false).
    #[arg(long)]
    pub no_push: bool,

    /// Stop (leaving the group) after this many seconds; default: run until Ctrl-C.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub run_for: Option<Duration>,

    /// Partitions of the source topics the demo creates when they are missing.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..))]
    pub partitions: i32,

    /// The topology epoch the members join with.
    #[arg(long, value_name = "EPOCH", default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..))]
    pub topology_epoch: i32,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e9) {
        return Err(format!("{text} is not a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// What parsing decided.
#[derive(Debug)]
pub enum Parsed {
    Run(Options),
    /// Print this (help or version) on stdout and exit 0.
    Print(String),
    /// Print this one line on stderr and exit with [`USAGE_EXIT`].
    Usage(String),
}

pub fn parse<I, T>(args: I) -> Parsed
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match Options::try_parse_from(args) {
        Ok(options) => Parsed::Run(options),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            Parsed::Print(e.to_string())
        }
        Err(e) => Parsed::Usage(one_line(&e)),
    }
}

/// clap's multi-line error as one line: its first line, plus the accepted values when clap
/// lists them on a line of their own.
fn one_line(e: &clap::Error) -> String {
    let rendered = e.to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let values = lines
        .find(|l| l.starts_with("[possible values:"))
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    format!("Error: {first}{values} (see --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(args: &[&str]) -> String {
        match parse(std::iter::once("kcoord-streams-demo").chain(args.iter().copied())) {
            Parsed::Usage(line) => line,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn the_readme_command_line_parses_with_defaults() {
        let args = [
            "kcoord-streams-demo",
            "--bootstrap-server",
            "127.0.0.1:9092",
            "--group",
            "orders-app",
            "--topology",
            "examples/orders.json",
        ];
        let Parsed::Run(options) = parse(args) else {
            panic!()
        };
        assert_eq!(
            (
                options.members,
                options.heartbeat_version,
                options.no_push,
                options.run_for
            ),
            (1, None, false, None)
        );
        assert_eq!(options.partitions, 3);
    }

    #[test]
    fn bad_values_are_one_line_each() {
        let base = [
            "--bootstrap-server",
            "b:1",
            "--group",
            "g",
            "--topology",
            "t.json",
        ];
        let with = |extra: &[&str]| usage(&[&base[..], extra].concat());
        assert!(
            with(&["--members", "0"]).starts_with("Error: invalid value '0' for '--members <N>'"),
            "{}",
            with(&["--members", "0"])
        );
        assert!(with(&["--heartbeat-version", "3"])
            .starts_with("Error: invalid value '3' for '--heartbeat-version <VERSION>'"));
        assert!(
            with(&["--run-for", "0"]).contains("not a positive number of seconds"),
            "{}",
            with(&["--run-for", "0"])
        );
        assert!(with(&["--run-for=-1"]).contains("not a positive number of seconds"));
        assert!(with(&["--run-for", "soon"]).contains("not a number of seconds"));
        assert!(with(&["--bogus"]).starts_with("Error: unexpected argument '--bogus' found"));
        assert!(usage(&["--group", "g"])
            .starts_with("Error: the following required arguments were not provided"));
        for line in [with(&["--members", "x"]), usage(&[])] {
            assert_eq!(line.lines().count(), 1, "{line}");
        }
    }
}
