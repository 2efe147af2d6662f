//! `kafka-topics`, after Apache Kafka's `TopicCommand` (trunk): its options, parsed as its
//! joptsimple parser does (`--name value` or `--name=value`, unambiguous prefixes of long
//! names), its checks and messages, and its `--list` output. kcoord implements `--list`:
//!
//! - the names come from the admin client's `list_topics` (ListTopics, KIP-142, when the server
//!   offers key 96; Metadata otherwise), with the internal topics unless `--exclude-internal`;
//! - sorted (Java's `String` order; topic names are ASCII, so byte order), filtered by
//!   `--topic` (a Java-style regular expression matching the whole name, commas standing for
//!   `|`, as Kafka's `IncludeList`), and printed one per line. As Kafka joins the names with
//!   newlines and prints the result with `println`, an empty list prints one empty line.
//!
//! Where Kafka fails, so does this, with Kafka's text and exit status 1: usage errors (no
//! arguments, not exactly one action) print the message and the usage on stderr; a missing
//! `--bootstrap-server` prints `--bootstrap-server must be specified` on stderr; everything
//! else (an unknown option, an unreachable server, a Kafka error) prints
//! `Error while executing topic command : <message>` on stdout. `--help` prints the usage on
//! stdout and exits 0. The other actions (`--create`, `--describe`, `--alter`, `--delete`)
//! are recognized but not implemented.

use std::io::Write;
use std::time::Duration;

use kcoord_client::{Client, ClientConfig};
use regex::Regex;

/// Kafka's `default.api.timeout.ms`: the bound on the whole listing.
const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(60);

/// Options that take a value.
const WITH_ARGUMENT: &[&str] = &[
    "bootstrap-server",
    "command-config",
    "config",
    "delete-config",
    "partition-size-limit-per-response",
    "partitions",
    "replica-assignment",
    "replication-factor",
    "topic",
    "topic-id",
];

/// Options without a value.
const FLAGS: &[&str] = &[
    "alter",
    "at-min-isr-partitions",
    "create",
    "delete",
    "describe",
    "exclude-internal",
    "help",
    "if-exists",
    "if-not-exists",
    "list",
    "topics-with-overrides",
    "unavailable-partitions",
    "under-min-isr-partitions",
    "under-replicated-partitions",
    "version",
];

const ACTIONS: &[&str] = &["create", "list", "alter", "describe", "delete"];

const USAGE: &str = "\
Usage: kafka-topics --bootstrap-server <server to connect to> --list [--exclude-internal] [--topic <topic>]

Option                                   Description
------                                   -----------
--bootstrap-server <String: server to    REQUIRED: The Kafka server to connect to.
  connect to>
--command-config <String: command        Property file containing configs to be passed to
  config property file>                    Admin Client (client.id, request.timeout.ms,
                                           default.api.timeout.ms, security.protocol with
                                           its sasl.* and ssl.* keys; see below).
--exclude-internal                       Exclude internal topics when listing or describing
                                           topics. By default, the internal topics are included.
--help                                   Print usage information.
--list                                   List all available topics.
--topic <String: topic>                  The topic to create, alter, describe or delete. It
                                           also accepts a regular expression, except for
                                           --create option.
--version                                Display Kafka version.
(--create, --alter, --describe and --delete are not implemented by kcoord.)
";

/// A failure and where Kafka reports it.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// `CommandLineUtils.printUsageAndExit`: the message and the usage on stderr.
    Usage(String),
    /// `IllegalArgumentException` out of the options: the message on stderr.
    Argument(String),
    /// Anything else: `Error while executing topic command : <message>` on stdout.
    Execution(String),
}

/// The parsed command line: each option with its values, in order.
#[derive(Debug, Default)]
struct Parsed {
    options: Vec<(&'static str, Option<String>)>,
}

impl Parsed {
    fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| *n == name)
    }

    /// The first value of `name` (joptsimple's `valueOf`).
    fn value(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// joptsimple: an exact long name, or a prefix of exactly one.
fn resolve(name: &str) -> Option<&'static str> {
    let all = || WITH_ARGUMENT.iter().chain(FLAGS).copied();
    if let Some(exact) = all().find(|o| *o == name) {
        return Some(exact);
    }
    let mut matches = all().filter(|o| o.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(only), None) if !name.is_empty() => Some(only),
        _ => None,
    }
}

fn parse(args: &[String]) -> Result<Parsed, Failure> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            // joptsimple keeps non-option arguments; TopicCommand ignores them.
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (body, None),
        };
        let Some(option) = resolve(name) else {
            return Err(Failure::Execution(format!(
                "{name} is not a recognized option"
            )));
        };
        if WITH_ARGUMENT.contains(&option) {
            let value = match inline {
                Some(value) => value,
                None => match args.get(i) {
                    Some(value) => {
                        i += 1;
                        value.clone()
                    }
                    None => {
                        return Err(Failure::Execution(format!(
                            "Option {option} requires an argument"
                        )))
                    }
                },
            };
            parsed.options.push((option, Some(value)));
        } else {
            if inline.is_some() {
                return Err(Failure::Execution(format!(
                    "Option {option} does not take an argument"
                )));
            }
            parsed.options.push((option, None));
        }
    }
    Ok(parsed)
}

/// What to do after the checks of `TopicCommandOptions.checkArgs`.
#[derive(Debug, PartialEq, Eq)]
enum Checked {
    Help,
    Version,
    List {
        bootstrap: String,
        command_config: Option<String>,
        topic: Option<String>,
        exclude_internal: bool,
    },
}

fn check(args: &[String]) -> Result<Checked, Failure> {
    if args.is_empty() {
        return Err(Failure::Usage(
            "Create, delete, describe, or change a topic.".into(),
        ));
    }
    let parsed = parse(args)?;
    if parsed.has("help") {
        return Ok(Checked::Help);
    }
    if parsed.has("version") {
        return Ok(Checked::Version);
    }
    let actions: Vec<&str> = ACTIONS.iter().copied().filter(|a| parsed.has(a)).collect();
    if actions.len() != 1 {
        return Err(Failure::Usage("Command must include exactly one action: --list, --describe, --create, --alter or --delete".into()));
    }
    let Some(bootstrap) = parsed.value("bootstrap-server") else {
        return Err(Failure::Argument(
            "--bootstrap-server must be specified".into(),
        ));
    };
    for (option, allowed) in [
        ("exclude-internal", &["list", "describe"][..]),
        ("if-exists", &["alter", "delete", "describe"][..]),
    ] {
        if parsed.has(option) && !allowed.contains(&actions[0]) {
            return Err(Failure::Usage(format!(
                "Option \"[{option}]\" can't be used with option \"[{}]\"",
                actions[0]
            )));
        }
    }
    if actions[0] != "list" {
        return Err(Failure::Execution(format!(
            "--{} is not implemented by kcoord's kafka-topics; only --list is",
            actions[0]
        )));
    }
    Ok(Checked::List {
        bootstrap: bootstrap.to_string(),
        command_config: parsed.value("command-config").map(str::to_string),
        topic: parsed.value("topic").map(str::to_string),
        exclude_internal: parsed.has("exclude-internal"),
    })
}

/// Kafka's `Topic.isInternal`.
fn is_internal(topic: &str) -> bool {
    matches!(
        topic,
        "__consumer_offsets" | "__transaction_state" | "__share_group_state"
    )
}

/// Kafka's `IncludeList`: commas mean `|`, blanks and surrounding quotes are dropped, and the
/// expression must match the whole name.
fn include_list(raw: &str) -> Result<Regex, Failure> {
    let cleaned: String = raw.trim().replace(',', "|").replace(' ', "");
    let cleaned = cleaned
        .trim_start_matches(['"', '\''])
        .trim_end_matches(['"', '\'']);
    Regex::new(&format!("^(?:{cleaned})$"))
        .map_err(|e| Failure::Execution(format!("{cleaned} is an invalid regex: {e}")))
}

/// Kafka's `doGetTopics` over names already sorted.
fn select(
    sorted: Vec<String>,
    topic: Option<&str>,
    exclude_internal: bool,
) -> Result<Vec<String>, Failure> {
    let filter = topic.map(include_list).transpose()?;
    Ok(sorted
        .into_iter()
        .filter(|name| filter.as_ref().is_none_or(|re| re.is_match(name)))
        .filter(|name| !(exclude_internal && is_internal(name)))
        .collect())
}

/// The admin client settings from `--command-config` (see [`crate::command_config`]) and
/// how long the whole command may take (`default.api.timeout.ms`).
fn client_config(path: Option<&str>) -> Result<(ClientConfig, Duration), Failure> {
    let (config, properties) =
        crate::command_config::load("kafka-topics", path, &[]).map_err(Failure::Execution)?;
    let api_timeout = match properties.get("default.api.timeout.ms") {
        Some(value) => kcoord_client::client_config::millis("default.api.timeout.ms", value)
            .map_err(|e| Failure::Execution(e.to_string()))?,
        None => DEFAULT_API_TIMEOUT,
    };
    Ok((config, api_timeout))
}

async fn list(
    bootstrap: &str,
    config: ClientConfig,
    include_internal: bool,
) -> Result<Vec<String>, Failure> {
    let client = Client::connect(bootstrap, config)
        .await
        .map_err(|e| Failure::Execution(e.to_string()))?;
    let listings = client
        .list_topics(include_internal)
        .await
        .map_err(|e| Failure::Execution(e.to_string()))?;
    let mut names: Vec<String> = listings.into_iter().map(|t| t.name).collect();
    names.sort();
    Ok(names)
}

fn execute(checked: Checked, out: &mut dyn Write) -> Result<(), Failure> {
    let Checked::List {
        bootstrap,
        command_config,
        topic,
        exclude_internal,
    } = checked
    else {
        return Ok(());
    };
    let (config, api_timeout) = client_config(command_config.as_deref())?;
    let runtime = crate::runtime().map_err(|e| Failure::Execution(e.to_string()))?;
    let names = runtime.block_on(async {
        match tokio::time::timeout(api_timeout, list(&bootstrap, config, !exclude_internal)).await {
            Ok(names) => names,
            Err(_) => Err(Failure::Execution(
                "Timed out waiting for a node assignment. Call: listTopics".into(),
            )),
        }
    })?;
    let selected = select(names, topic.as_deref(), exclude_internal)?;
    writeln!(out, "{}", selected.join("\n")).map_err(|e| Failure::Execution(e.to_string()))
}

/// Runs the tool with `args` (without the program name) and returns the exit status.
pub fn run(
    args: impl IntoIterator<Item = String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let args: Vec<String> = args.into_iter().collect();
    let outcome = check(&args).and_then(|checked| match checked {
        Checked::Help => write!(out, "{USAGE}\n{}\n", crate::command_config::HELP)
            .map_err(|e| Failure::Execution(e.to_string())),
        Checked::Version => writeln!(out, "{} (kcoord)", env!("CARGO_PKG_VERSION"))
            .map_err(|e| Failure::Execution(e.to_string())),
        list @ Checked::List { .. } => execute(list, out),
    });
    let code = match outcome {
        Ok(()) => 0,
        Err(Failure::Usage(message)) => {
            let _ = write!(err, "{message}\n{USAGE}");
            1
        }
        Err(Failure::Argument(message)) => {
            let _ = writeln!(err, "{message}");
            1
        }
        Err(Failure::Execution(message)) => {
            let _ = writeln!(out, "Error while executing topic command : {message}");
            1
        }
    };
    let _ = out.flush();
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse_as_joptsimple_does() {
        let checked = check(&args(&[
            "--bootstrap-server=h:1",
            "--list",
            "--exclude",
            "--topic",
            "a.*",
        ]))
        .unwrap();
        assert_eq!(
            checked,
            Checked::List {
                bootstrap: "h:1".into(),
                command_config: None,
                topic: Some("a.*".into()),
                exclude_internal: true
            }
        );
        assert_eq!(
            check(&args(&["--bogus"])),
            Err(Failure::Execution(
                "bogus is not a recognized option".into()
            ))
        );
        // "de" is a prefix of delete, delete-config, describe.
        assert_eq!(
            check(&args(&["--de"])),
            Err(Failure::Execution("de is not a recognized option".into()))
        );
        assert_eq!(
            check(&args(&["--list", "--bootstrap-server"])),
            Err(Failure::Execution(
                "Option bootstrap-server requires an argument".into()
            ))
        );
        assert_eq!(check(&args(&["--help"])), Ok(Checked::Help));
    }

    #[test]
    fn kafkas_checks_and_messages() {
        assert_eq!(
            check(&[]),
            Err(Failure::Usage(
                "Create, delete, describe, or change a topic.".into()
            ))
        );
        let exactly_one = Failure::Usage("Command must include exactly one action: --list, --describe, --create, --alter or --delete".into());
        assert_eq!(
            check(&args(&["--bootstrap-server", "h:1"])),
            Err(exactly_one)
        );
        assert!(matches!(
            check(&args(&[
                "--list",
                "--describe",
                "--bootstrap-server",
                "h:1"
            ])),
            Err(Failure::Usage(_))
        ));
        assert_eq!(
            check(&args(&["--list"])),
            Err(Failure::Argument(
                "--bootstrap-server must be specified".into()
            ))
        );
        assert_eq!(
            check(&args(&[
                "--create",
                "--exclude-internal",
                "--bootstrap-server",
                "h:1"
            ])),
            Err(Failure::Usage(
                "Option \"[exclude-internal]\" can't be used with option \"[create]\"".into()
            ))
        );
        assert!(
            matches!(check(&args(&["--describe", "--bootstrap-server", "h:1"])), Err(Failure::Execution(m)) if m.contains("only --list"))
        );
    }

    #[test]
    fn include_lists_match_whole_names_and_commas_mean_or() {
        let names = || args(&["__consumer_offsets", "audit", "orders", "orders-v2"]);
        assert_eq!(
            select(names(), Some("orders"), false).unwrap(),
            args(&["orders"])
        );
        assert_eq!(
            select(names(), Some("orders.*"), false).unwrap(),
            args(&["orders", "orders-v2"])
        );
        assert_eq!(
            select(names(), Some("'audit, orders'"), false).unwrap(),
            args(&["audit", "orders"])
        );
        assert_eq!(
            select(names(), Some("__.*"), true).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            select(names(), None, true).unwrap(),
            args(&["audit", "orders", "orders-v2"])
        );
        assert!(matches!(
            select(names(), Some("("), false),
            Err(Failure::Execution(_))
        ));
    }
}
