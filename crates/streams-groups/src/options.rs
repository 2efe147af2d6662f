//! The command line: Kafka's `StreamsGroupCommandOptions` flags (the list, describe and
//! delete actions), parsed with clap and checked with Kafka's rules and messages.
//!
//! Not supported (yet): `--reset-offsets`, `--delete-offsets` and their options, and
//! `--delete-all-internal-topics`; clap rejects them as unknown arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};

use crate::error::CliError;
use crate::format::OutputFormat;
use crate::model::GroupState;

/// The raw flags. Every option Kafka's tool has for these actions, plus `--output`.
#[derive(Debug, Parser)]
#[command(
    name = "kafka-streams-groups",
    version,
    about = "This tool helps to list, describe and delete streams groups.",
    after_help = crate::command_config::PROPERTIES_HELP,
    args_override_self = true
)]
pub struct Options {
    /// REQUIRED: The server(s) to connect to.
    #[arg(long = "bootstrap-server", value_name = "server to connect to")]
    pub bootstrap_server: Option<String>,

    /// Property file containing configs to be passed to Admin Client (client.id,
    /// request.timeout.ms, security.protocol with its sasl.* and ssl.* keys; see below).
    #[arg(long = "command-config", value_name = "command config property file")]
    pub command_config: Option<PathBuf>,

    /// List all streams groups.
    #[arg(long)]
    pub list: bool,

    /// Describe streams group and list offset lag related to given group.
    #[arg(long)]
    pub describe: bool,

    /// Delete topic partition offsets and ownership information for one or more streams groups.
    #[arg(long)]
    pub delete: bool,

    /// The streams group id (may be given several times).
    #[arg(long, value_name = "group id", action = ArgAction::Append)]
    pub group: Vec<String>,

    /// Apply to all streams groups.
    #[arg(long = "all-groups")]
    pub all_groups: bool,

    /// When specified with --list, it displays the state of all groups. It can also be used to
    /// list groups with specific states. Valid values are Empty, NotReady, Stable, Assigning,
    /// Reconciling, and Dead.
    #[arg(long, value_name = "states", num_args = 0..=1)]
    pub state: Option<Option<String>>,

    /// Describe members of the group. This option may be used with the --describe option only.
    #[arg(long)]
    pub members: bool,

    /// Describe the group and list all topic partitions in the group along with their offset
    /// information. This is the default sub-action and may be used with the --describe option
    /// only.
    #[arg(long)]
    pub offsets: bool,

    /// Describe the group's lag per sub-topology, the one that lags most first (kcoord's
    /// addition: the --offsets table summed per sub-topology). This option may be used with the
    /// --describe option only.
    #[arg(long)]
    pub lag: bool,

    /// Describe the topology of the streams group, as recorded by the broker's topology
    /// description plugin. This option may be used with the '--describe' option only.
    #[arg(long)]
    pub topology: bool,

    /// Use with --describe --state to show group epoch and target assignment epoch; with
    /// --describe --members to show member epochs, target assignments and the member protocol;
    /// with --describe [--offsets] to show leader epochs.
    #[arg(long)]
    pub verbose: bool,

    /// The timeout that can be set for some use cases, in milliseconds.
    #[arg(long, value_name = "timeout (ms)", default_value_t = 30000)]
    pub timeout: u64,

    /// Output format of --describe --topology (beyond Kafka's tool).
    #[arg(long, value_enum, value_name = "format")]
    pub output: Option<OutputFormat>,
}

/// What `--describe` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Describe {
    Offsets,
    /// `--lag`: the offsets summed per sub-topology.
    Lag,
    Members,
    State,
    Topology(OutputFormat),
}

/// Which groups an action applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Groups {
    Named(Vec<String>),
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `--list`; `Some(states)` with `--state` (empty = all states, shown with their state).
    List {
        states: Option<Vec<GroupState>>,
    },
    Describe {
        groups: Groups,
        what: Describe,
        verbose: bool,
    },
    Delete {
        groups: Groups,
    },
}

/// A checked command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub bootstrap_server: String,
    pub command_config: Option<PathBuf>,
    pub timeout: Duration,
    pub action: Action,
}

impl Options {
    /// Kafka's `checkArgs` (for the supported actions) and the one-action rule, with Kafka's
    /// messages where it has one.
    pub fn check(self) -> Result<Command, CliError> {
        let Some(bootstrap_server) = self.bootstrap_server.clone() else {
            return Err(CliError::Usage(
                "Missing required argument \"[bootstrap-server]\"".into(),
            ));
        };
        self.check_group_scope().map_err(CliError::Usage)?;
        self.check_available_options().map_err(CliError::Usage)?;
        self.check_conflicts().map_err(CliError::Usage)?;
        let action = self.action()?;
        Ok(Command {
            bootstrap_server,
            command_config: self.command_config,
            timeout: Duration::from_millis(self.timeout),
            action,
        })
    }

    /// `--describe` and `--delete` need groups; `--describe` takes one sub-action at most.
    fn check_group_scope(&self) -> Result<(), String> {
        let scope = "takes one of these options: [all-groups], [group]";
        let has_groups = !self.group.is_empty() || self.all_groups;
        if self.describe {
            if !has_groups {
                return Err(format!("Option [describe] {scope}"));
            }
            let sub_actions = [
                self.members,
                self.offsets,
                self.state.is_some(),
                self.topology,
            ];
            let others = sub_actions.iter().filter(|s| **s).count();
            if others > 1 {
                return Err("Option [describe] takes at most one of these options: [members], [offsets], [state], [topology]".into());
            }
            // Kafka's message above is Kafka's tool's; --lag is kcoord's own.
            if self.lag && others > 0 {
                return Err("Option [lag] can't be used with option [members], [offsets], [state] or [topology]".into());
            }
            if matches!(self.state, Some(Some(_))) {
                return Err("Option [describe] does not take a value for [state]".into());
            }
        }
        if self.delete && !has_groups {
            return Err(format!("Option [delete] {scope}"));
        }
        Ok(())
    }

    /// joptsimple's `availableIf`: these only make sense with their action.
    fn check_available_options(&self) -> Result<(), String> {
        for (flag, set) in [
            ("members", self.members),
            ("offsets", self.offsets),
            ("topology", self.topology),
            ("lag", self.lag),
            ("verbose", self.verbose),
        ] {
            if set && !self.describe {
                return Err(format!(
                    "Option [{flag}] may be used with the --describe option only"
                ));
            }
        }
        if self.state.is_some() && !self.list && !self.describe {
            return Err(
                "Option [state] may be used with the --list or --describe option only".into(),
            );
        }
        if self.output.is_some() && !(self.describe && self.topology) {
            return Err("Option [output] may be used with --describe --topology only".into());
        }
        if self.output.is_some_and(OutputFormat::single_group) && self.group.len() > 1 {
            return Err(crate::command::one_drawing_only(self.group.len()));
        }
        Ok(())
    }

    /// Options that exclude each other, and exactly one action.
    fn check_conflicts(&self) -> Result<(), String> {
        if self.list {
            for (flag, set) in [
                ("members", self.members),
                ("offsets", self.offsets),
                ("topology", self.topology),
                ("lag", self.lag),
            ] {
                if set {
                    return Err(format!(
                        "Option \"[list]\" can't be used with option \"[{flag}]\""
                    ));
                }
            }
        }
        if !self.group.is_empty() && self.all_groups {
            return Err("Option \"[group]\" can't be used with option \"[all-groups]\"".into());
        }
        if !self.group.is_empty() && self.list {
            return Err("Option \"[group]\" can't be used with option \"[list]\"".into());
        }
        let actions = [self.list, self.describe, self.delete]
            .iter()
            .filter(|a| **a)
            .count();
        if actions != 1 {
            return Err(
                "Command must include exactly one action: --list, --describe, or --delete.".into(),
            );
        }
        Ok(())
    }

    /// The one action the (checked) options ask for.
    fn action(&self) -> Result<Action, CliError> {
        let groups = if self.all_groups {
            Groups::All
        } else {
            Groups::Named(self.group.clone())
        };
        if self.list {
            let states = match &self.state {
                None => None,
                Some(None) => Some(Vec::new()),
                Some(Some(list)) => Some(parse_states(list)?),
            };
            return Ok(Action::List { states });
        }
        if !self.describe {
            return Ok(Action::Delete { groups });
        }
        let what = if self.members {
            Describe::Members
        } else if self.state.is_some() {
            Describe::State
        } else if self.topology {
            Describe::Topology(self.output.unwrap_or_default())
        } else if self.lag {
            Describe::Lag
        } else {
            Describe::Offsets
        };
        Ok(Action::Describe {
            groups,
            what,
            verbose: self.verbose,
        })
    }
}

/// Kafka's `groupStatesFromString`: a comma-separated, case-insensitive list of streams group
/// states. An empty value means all states.
fn parse_states(input: &str) -> Result<Vec<GroupState>, CliError> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let mut states = Vec::new();
    for name in input.split(',') {
        let state = GroupState::parse(name.trim());
        if state == GroupState::Unknown {
            let valid: Vec<&str> = GroupState::STREAMS.iter().map(|s| s.as_str()).collect();
            return Err(CliError::Usage(format!(
                "Invalid state list '{input}'. Valid states are: {}",
                valid.join(", ")
            )));
        }
        if !states.contains(&state) {
            states.push(state);
        }
    }
    Ok(states)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<Command, String> {
        let argv = std::iter::once("kafka-streams-groups").chain(args.iter().copied());
        let options = Options::try_parse_from(argv).map_err(|e| e.to_string())?;
        options.check().map_err(|e| e.to_string())
    }

    fn action(args: &[&str]) -> Action {
        check(args).unwrap().action
    }

    #[test]
    fn actions_and_sub_actions() {
        fn with<'a>(rest: &[&'a str]) -> Vec<&'a str> {
            [&["--bootstrap-server", "localhost:9092"][..], rest].concat()
        }
        assert_eq!(action(&with(&["--list"])), Action::List { states: None });
        assert_eq!(
            action(&with(&["--list", "--state"])),
            Action::List {
                states: Some(vec![])
            }
        );
        assert_eq!(
            action(&with(&["--list", "--state", "stable,EMPTY"])),
            Action::List {
                states: Some(vec![GroupState::Stable, GroupState::Empty])
            }
        );
        assert_eq!(
            action(&with(&["--describe", "--group", "a", "--group", "b"])),
            Action::Describe {
                groups: Groups::Named(vec!["a".into(), "b".into()]),
                what: Describe::Offsets,
                verbose: false
            }
        );
        assert_eq!(
            action(&with(&[
                "--describe",
                "--all-groups",
                "--state",
                "--verbose"
            ])),
            Action::Describe {
                groups: Groups::All,
                what: Describe::State,
                verbose: true
            }
        );
        assert_eq!(
            action(&with(&[
                "--describe",
                "--group",
                "g",
                "--topology",
                "--output",
                "mermaid"
            ])),
            Action::Describe {
                groups: Groups::Named(vec!["g".into()]),
                what: Describe::Topology(OutputFormat::Mermaid),
                verbose: false
            }
        );
        assert_eq!(
            action(&with(&["--delete", "--group", "g"])),
            Action::Delete {
                groups: Groups::Named(vec!["g".into()])
            }
        );
        assert_eq!(
            check(&with(&["--list", "--timeout", "1500"]))
                .unwrap()
                .timeout,
            Duration::from_millis(1500)
        );
        assert_eq!(
            check(&with(&["--list", "--list"])).unwrap().action,
            Action::List { states: None }
        );
    }

    #[test]
    fn kafka_messages_for_bad_combinations() {
        let b = ["--bootstrap-server", "localhost:9092"];
        let err = |rest: &[&str]| check(&[&b[..], rest].concat()).unwrap_err();
        assert_eq!(
            check(&["--list"]).unwrap_err(),
            "Missing required argument \"[bootstrap-server]\""
        );
        assert_eq!(
            err(&["--describe"]),
            "Option [describe] takes one of these options: [all-groups], [group]"
        );
        assert_eq!(
            err(&["--delete"]),
            "Option [delete] takes one of these options: [all-groups], [group]"
        );
        assert_eq!(
            err(&["--describe", "--group", "g", "--members", "--topology"]),
            "Option [describe] takes at most one of these options: [members], [offsets], [state], [topology]"
        );
        assert_eq!(
            err(&["--describe", "--group", "g", "--lag", "--offsets"]),
            "Option [lag] can't be used with option [members], [offsets], [state] or [topology]"
        );
        assert_eq!(
            err(&["--lag", "--list"]),
            "Option [lag] may be used with the --describe option only"
        );
        assert_eq!(
            err(&["--describe", "--group", "g", "--state", "Stable"]),
            "Option [describe] does not take a value for [state]"
        );
        assert_eq!(
            err(&["--list", "--members"]),
            "Option [members] may be used with the --describe option only"
        );
        assert_eq!(
            err(&["--list", "--group", "g"]),
            "Option \"[group]\" can't be used with option \"[list]\""
        );
        assert_eq!(
            err(&["--describe", "--group", "g", "--all-groups"]),
            "Option \"[group]\" can't be used with option \"[all-groups]\""
        );
        assert_eq!(
            err(&["--describe", "--group", "g", "--output", "json"]),
            "Option [output] may be used with --describe --topology only"
        );
        assert_eq!(
            err(&[]),
            "Command must include exactly one action: --list, --describe, or --delete."
        );
        assert!(err(&["--list", "--delete", "--group", "g"]).contains("can't be used with"));
        assert_eq!(
            err(&["--list", "--state", "Stable,Running"]),
            "Invalid state list 'Stable,Running'. Valid states are: Empty, NotReady, Assigning, Reconciling, Stable, Dead"
        );
        assert!(check(&[&b[..], &["--list", "--bogus"]].concat())
            .unwrap_err()
            .contains("unexpected argument '--bogus'"));
        assert!(check(
            &[
                &b[..],
                &[
                    "--describe",
                    "--group",
                    "g",
                    "--topology",
                    "--output",
                    "png"
                ]
            ]
            .concat()
        )
        .is_err());
    }

    #[test]
    fn svg_draws_one_group() {
        let b = ["--bootstrap-server", "localhost:9092"];
        let svg = ["--describe", "--topology", "--output", "svg"];
        assert_eq!(
            check(&[&b[..], &svg, &["--group", "g"]].concat())
                .unwrap()
                .action,
            Action::Describe {
                groups: Groups::Named(vec!["g".into()]),
                what: Describe::Topology(OutputFormat::Svg),
                verbose: false
            }
        );
        assert_eq!(
            check(&[&b[..], &svg, &["--group", "a", "--group", "b"]].concat()).unwrap_err(),
            "Option [output] svg draws the topology of one group, but 2 groups were given: \
             describe them one --group at a time (an SVG document holds one drawing)."
        );
        // The same group twice is still two drawings asked for; other formats take many.
        assert!(check(&[&b[..], &svg, &["--group", "a", "--group", "a"]].concat()).is_err());
        let dot = ["--describe", "--topology", "--output", "dot"];
        assert!(check(&[&b[..], &dot, &["--group", "a", "--group", "b"]].concat()).is_ok());
    }
}
