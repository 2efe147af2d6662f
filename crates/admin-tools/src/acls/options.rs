//! `kafka-acls` command line: `AclCommandOptions`' options, parsed as joptsimple parses them
//! (`--name value`, `--name=value`, unambiguous prefixes of long names, repeatable options),
//! and its `checkArgs`, with Kafka's messages.

/// Options that take a value.
const WITH_ARGUMENT: &[&str] = &[
    "allow-host",
    "allow-principal",
    "bootstrap-controller",
    "bootstrap-server",
    "delegation-token",
    "deny-host",
    "deny-principal",
    "group",
    "operation",
    "resource-pattern-type",
    "topic",
    "transactional-id",
    "user-principal",
];

/// Options whose value is optional (joptsimple's `withOptionalArg`): the next argument is
/// their value unless it looks like an option.
const OPTIONAL_ARGUMENT: &[&str] = &["command-config", "principal"];

/// Options without a value.
const FLAGS: &[&str] = &[
    "add",
    "cluster",
    "consumer",
    "force",
    "help",
    "idempotent",
    "list",
    "producer",
    "remove",
    "version",
];

/// A usage error: Kafka's `printUsageAndExit` (message and usage on stderr, status 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

/// The parsed command line: each option with its value, in order.
#[derive(Debug, Default, Clone)]
pub struct Parsed {
    options: Vec<(&'static str, Option<String>)>,
}

impl Parsed {
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| *n == name)
    }

    /// Every value of `name`, in order (joptsimple's `valuesOf`).
    pub fn values(&self, name: &str) -> Vec<&str> {
        self.options
            .iter()
            .filter(|(n, _)| *n == name)
            .filter_map(|(_, v)| v.as_deref())
            .collect()
    }

    /// The first value of `name` (joptsimple's `valueOf`).
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values(name).first().copied()
    }
}

/// joptsimple: an exact long name, or a prefix of exactly one.
fn resolve(name: &str) -> Option<&'static str> {
    let all = || {
        WITH_ARGUMENT
            .iter()
            .chain(OPTIONAL_ARGUMENT)
            .chain(FLAGS)
            .copied()
    };
    if let Some(exact) = all().find(|o| *o == name) {
        return Some(exact);
    }
    let mut matches = all().filter(|o| o.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(only), None) if !name.is_empty() => Some(only),
        _ => None,
    }
}

fn looks_like_option(arg: &str) -> bool {
    arg.starts_with('-') && arg.len() > 1
}

pub fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            // joptsimple keeps non-option arguments; AclCommand ignores them.
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (body, None),
        };
        let Some(option) = resolve(name) else {
            return Err(UsageError(format!("{name} is not a recognized option")));
        };
        let value = if WITH_ARGUMENT.contains(&option) {
            match inline {
                Some(value) => Some(value),
                None => match args.get(i) {
                    Some(value) => {
                        i += 1;
                        Some(value.clone())
                    }
                    None => {
                        return Err(UsageError(format!("Option {option} requires an argument")))
                    }
                },
            }
        } else if OPTIONAL_ARGUMENT.contains(&option) {
            match inline {
                Some(value) => Some(value),
                None => match args.get(i) {
                    Some(value) if !looks_like_option(value) => {
                        i += 1;
                        Some(value.clone())
                    }
                    _ => None,
                },
            }
        } else {
            if inline.is_some() {
                return Err(UsageError(format!(
                    "Option {option} does not take an argument"
                )));
            }
            None
        };
        parsed.options.push((option, value));
    }
    Ok(parsed)
}

/// What to do after the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Remove,
    List,
}

/// `CommandLineUtils.checkInvalidArgs`: `Option "[used]" can't be used with option "[other]"`.
fn check_invalid(parsed: &Parsed, used: &str, invalid: &[&str]) -> Result<(), UsageError> {
    if !parsed.has(used) {
        return Ok(());
    }
    match invalid.iter().find(|o| parsed.has(o)) {
        Some(other) => Err(UsageError(format!(
            "Option \"[{used}]\" can't be used with option \"[{other}]\""
        ))),
        None => Ok(()),
    }
}

/// `AclCommandOptions.checkArgs`, help and version aside.
pub fn check(parsed: &Parsed) -> Result<Action, UsageError> {
    let server = parsed.has("bootstrap-server");
    let controller = parsed.has("bootstrap-controller");
    if server && controller {
        return Err(UsageError(
            "Only one of --bootstrap-server or --bootstrap-controller must be specified".into(),
        ));
    }
    if !server && !controller {
        return Err(UsageError(
            "One of --bootstrap-server or --bootstrap-controller must be specified".into(),
        ));
    }
    let actions: Vec<Action> = [
        ("add", Action::Add),
        ("remove", Action::Remove),
        ("list", Action::List),
    ]
    .into_iter()
    .filter(|(name, _)| parsed.has(name))
    .map(|(_, action)| action)
    .collect();
    let [action] = actions[..] else {
        return Err(UsageError(
            "Command must include exactly one action: --list, --add, --remove. ".into(),
        ));
    };
    check_invalid(
        parsed,
        "list",
        &[
            "producer",
            "consumer",
            "allow-host",
            "allow-principal",
            "deny-host",
            "deny-principal",
        ],
    )?;
    for role in ["producer", "consumer"] {
        check_invalid(parsed, role, &["operation", "deny-principal", "deny-host"])?;
    }
    if parsed.has("principal") && !parsed.has("list") {
        return Err(UsageError(
            "The --principal option is only available if --list is set".into(),
        ));
    }
    if parsed.has("producer") && !parsed.has("topic") {
        return Err(UsageError(
            "With --producer you must specify a --topic".into(),
        ));
    }
    if parsed.has("idempotent") && !parsed.has("producer") {
        return Err(UsageError(
            "The --idempotent option is only available if --producer is set".into(),
        ));
    }
    if parsed.has("consumer")
        && (!parsed.has("topic")
            || !parsed.has("group")
            || (!parsed.has("producer")
                && (parsed.has("cluster") || parsed.has("transactional-id"))))
    {
        return Err(UsageError("With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified.".into()));
    }
    Ok(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn checked(list: &[&str]) -> Result<Action, UsageError> {
        check(&parse(&args(list))?)
    }

    #[test]
    fn options_parse_as_joptsimple_does() {
        let parsed = parse(&args(&[
            "--bootstrap-server=h:1",
            "--add",
            "--allow-principal",
            "User:a",
            "--allow-p",
            "User:b",
            "--oper",
            "Read",
            "--command-config",
            "--topic",
            "t",
            "--principal",
            "User:x",
        ]))
        .unwrap();
        assert_eq!(parsed.values("allow-principal"), vec!["User:a", "User:b"]);
        assert_eq!(parsed.value("operation"), Some("Read"));
        assert!(parsed.has("command-config"));
        assert_eq!(parsed.value("command-config"), None);
        assert_eq!(parsed.value("topic"), Some("t"));
        assert_eq!(parsed.value("principal"), Some("User:x"));
        assert_eq!(
            parse(&args(&["--bogus"])).unwrap_err(),
            UsageError("bogus is not a recognized option".into())
        );
        // "de" is a prefix of delegation-token, deny-host and deny-principal.
        assert_eq!(
            parse(&args(&["--de", "x"])).unwrap_err(),
            UsageError("de is not a recognized option".into())
        );
        assert_eq!(
            parse(&args(&["--topic"])).unwrap_err(),
            UsageError("Option topic requires an argument".into())
        );
    }

    #[test]
    fn kafkas_checks_and_messages() {
        let server = ["--bootstrap-server", "h:1"];
        let with = |rest: &[&'static str]| {
            let mut all = server.to_vec();
            all.extend_from_slice(rest);
            checked(&all)
        };
        assert_eq!(with(&["--list"]), Ok(Action::List));
        assert_eq!(
            checked(&["--list"]).unwrap_err().0,
            "One of --bootstrap-server or --bootstrap-controller must be specified"
        );
        assert_eq!(
            with(&["--list", "--bootstrap-controller", "c:1"])
                .unwrap_err()
                .0,
            "Only one of --bootstrap-server or --bootstrap-controller must be specified"
        );
        assert_eq!(
            with(&["--add", "--remove"]).unwrap_err().0,
            "Command must include exactly one action: --list, --add, --remove. "
        );
        assert_eq!(
            with(&["--list", "--allow-principal", "User:a"])
                .unwrap_err()
                .0,
            "Option \"[list]\" can't be used with option \"[allow-principal]\""
        );
        assert_eq!(
            with(&["--add", "--producer", "--topic", "t", "--operation", "Read"])
                .unwrap_err()
                .0,
            "Option \"[producer]\" can't be used with option \"[operation]\""
        );
        assert_eq!(
            with(&["--add", "--principal", "User:a"]).unwrap_err().0,
            "The --principal option is only available if --list is set"
        );
        assert_eq!(
            with(&["--add", "--producer"]).unwrap_err().0,
            "With --producer you must specify a --topic"
        );
        assert_eq!(
            with(&["--add", "--idempotent", "--topic", "t"])
                .unwrap_err()
                .0,
            "The --idempotent option is only available if --producer is set"
        );
        assert!(with(&["--add", "--consumer", "--topic", "t"])
            .unwrap_err()
            .0
            .starts_with("With --consumer you must specify a --topic and a --group"));
        assert_eq!(
            with(&[
                "--add",
                "--consumer",
                "--producer",
                "--topic",
                "t",
                "--group",
                "g",
                "--cluster"
            ]),
            Ok(Action::Add)
        );
    }
}
