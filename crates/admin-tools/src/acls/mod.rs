//! `kafka-acls`, after Apache Kafka 4.4's `AclCommand`: add, remove and list ACLs with
//! CreateAcls, DeleteAcls and DescribeAcls, with its options, checks, `--producer` and
//! `--consumer` expansions, prompts and output.
//!
//! Where kcoord's output differs: Kafka prints resources and entries in Java hash order (which
//! changes from run to run); here they are sorted (resource type, name, pattern type; then
//! principal, host, operation, permission). A failure prints `Error while executing ACL
//! command: <message>` on stdout without Kafka's stack trace. `--help` prints the usage on
//! stderr and exits 1, as Kafka's `printUsageAndExit` does.

pub mod options;
mod usage;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufRead, Write};

use kcoord_client::admin::{
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, KafkaPrincipal, PatternType,
    ResourceType,
};
use kcoord_client::Client;

use options::{Action, Parsed, UsageError};
use usage::USAGE;

// Kafka's `Resource.CLUSTER_NAME` and `AclEntry.WILDCARD_HOST`.
use kcoord_acl::{CLUSTER_NAME, WILDCARD_HOST};

/// Every operation, in code order, for the `--operation` help and parsing.
const OPERATIONS: [AclOperation; 16] = AclOperation::BY_CODE;

/// Why the command stopped, and where Kafka reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// `printUsageAndExit`: the message and the usage on stderr.
    Usage(String),
    /// Anything thrown while executing: `Error while executing ACL command: <message>` on
    /// stdout.
    Execution(String),
}

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Failure {
        Failure::Usage(e.0)
    }
}

/// Kafka's `ResourcePattern` (and `ResourcePatternFilter`, which prints the same way).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Pattern {
    resource_type: ResourceType,
    name: String,
    pattern_type: PatternType,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type, self.name, self.pattern_type
        )
    }
}

/// Kafka's `AccessControlEntry`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    principal: String,
    host: String,
    operation: AclOperation,
    permission: AclPermissionType,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal,
            self.host,
            self.operation.name(),
            self.permission
        )
    }
}

fn binding(pattern: &Pattern, entry: &Entry) -> AclBinding {
    AclBinding {
        resource_type: pattern.resource_type,
        resource_name: pattern.name.clone(),
        pattern_type: pattern.pattern_type,
        principal: entry.principal.clone(),
        host: entry.host.clone(),
        operation: entry.operation,
        permission: entry.permission,
    }
}

/// The filter for a resource pattern (filter), any entry.
fn pattern_filter(pattern: &Pattern) -> AclBindingFilter {
    AclBindingFilter {
        resource_type: pattern.resource_type,
        resource_name: Some(pattern.name.clone()),
        pattern_type: pattern.pattern_type,
        ..AclBindingFilter::any()
    }
}

/// The filter for one entry of a resource pattern filter (`AccessControlEntry.toFilter`).
fn entry_filter(pattern: &Pattern, entry: &Entry) -> AclBindingFilter {
    AclBindingFilter {
        principal: Some(entry.principal.clone()),
        host: Some(entry.host.clone()),
        operation: entry.operation,
        permission: entry.permission,
        ..pattern_filter(pattern)
    }
}

type AclMap = BTreeMap<Pattern, BTreeSet<Entry>>;

/// `--resource-pattern-type` (joptsimple's `EnumConverter`: any case; UNKNOWN refused).
fn pattern_type(parsed: &Parsed) -> Result<PatternType, Failure> {
    let Some(value) = parsed.value("resource-pattern-type") else {
        return Ok(PatternType::Literal);
    };
    [
        PatternType::Any,
        PatternType::Match,
        PatternType::Literal,
        PatternType::Prefixed,
    ]
    .into_iter()
    .find(|p| p.name().eq_ignore_ascii_case(value))
    .ok_or_else(|| {
        Failure::Execution(format!(
            "Cannot parse argument '{value}' of option resource-pattern-type"
        ))
    })
}

/// `SecurityUtils.operation`: the PascalCase name (`IdempotentWrite`) in any case; anything
/// else is UNKNOWN (refused later as unsupported).
fn operation(name: &str) -> AclOperation {
    let wanted = name.to_ascii_uppercase();
    OPERATIONS
        .into_iter()
        .find(|op| op.name().replace('_', "") == wanted)
        .unwrap_or(AclOperation::Unknown)
}

/// `getResourceFilter`: the resources the options name.
fn resource_filters(parsed: &Parsed, die_if_none: bool) -> Result<Vec<Pattern>, Failure> {
    let pattern_type = pattern_type(parsed)?;
    let mut filters = Vec::new();
    let mut add = |resource_type, name: &str| {
        let pattern = Pattern {
            resource_type,
            name: name.to_string(),
            pattern_type,
        };
        if !filters.contains(&pattern) {
            filters.push(pattern);
        }
    };
    for topic in parsed.values("topic") {
        add(ResourceType::Topic, topic.trim());
    }
    if pattern_type == PatternType::Literal && (parsed.has("cluster") || parsed.has("idempotent")) {
        add(ResourceType::Cluster, CLUSTER_NAME);
    }
    for group in parsed.values("group") {
        add(ResourceType::Group, group.trim());
    }
    // Kafka does not trim transactional ids.
    for id in parsed.values("transactional-id") {
        add(ResourceType::TransactionalId, id);
    }
    for token in parsed.values("delegation-token") {
        add(ResourceType::DelegationToken, token.trim());
    }
    for user in parsed.values("user-principal") {
        add(ResourceType::User, user.trim());
    }
    if filters.is_empty() && die_if_none {
        return Err(Failure::Usage("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>".into()));
    }
    Ok(filters)
}

fn principals(parsed: &Parsed, option: &str) -> Result<BTreeSet<String>, Failure> {
    parsed
        .values(option)
        .into_iter()
        .map(|text| {
            KafkaPrincipal::parse(text.trim())
                .map(|p| p.to_string())
                .map_err(|e| Failure::Execution(e.to_string()))
        })
        .collect()
}

/// `getHosts`: the hosts given, or `*` when principals are given without hosts.
fn hosts(parsed: &Parsed, host_option: &str, principal_option: &str) -> BTreeSet<String> {
    if parsed.has(host_option) {
        parsed
            .values(host_option)
            .into_iter()
            .map(|h| h.trim().to_string())
            .collect()
    } else if parsed.has(principal_option) {
        BTreeSet::from([WILDCARD_HOST.to_string()])
    } else {
        BTreeSet::new()
    }
}

/// `getAcl(opts, operations)`: allow and deny entries for every principal, operation and host.
fn entries(parsed: &Parsed, operations: &[AclOperation]) -> Result<BTreeSet<Entry>, Failure> {
    let mut acls = BTreeSet::new();
    for (permission, principal_option, host_option) in [
        (AclPermissionType::Allow, "allow-principal", "allow-host"),
        (AclPermissionType::Deny, "deny-principal", "deny-host"),
    ] {
        let principals = principals(parsed, principal_option)?;
        let hosts = hosts(parsed, host_option, principal_option);
        for principal in &principals {
            for operation in operations {
                for host in &hosts {
                    acls.insert(Entry {
                        principal: principal.clone(),
                        host: host.clone(),
                        operation: *operation,
                        permission,
                    });
                }
            }
        }
    }
    Ok(acls)
}

/// `getResourceFilterToAcls`: the options' own ACLs, or the `--producer` / `--consumer`
/// expansions, then `validateOperation`.
fn filter_to_acls(parsed: &Parsed) -> Result<AclMap, Failure> {
    let mut map = AclMap::new();
    let producer = parsed.has("producer");
    let consumer = parsed.has("consumer");
    if !producer && !consumer {
        let operations: Vec<AclOperation> = match parsed.values("operation") {
            given if given.is_empty() => vec![AclOperation::All],
            given => given.into_iter().map(|o| operation(o.trim())).collect(),
        };
        let acls = entries(parsed, &operations)?;
        for filter in resource_filters(parsed, true)? {
            map.insert(filter, acls.clone());
        }
    }
    if producer {
        use AclOperation::{Create, Describe, IdempotentWrite, Write};
        let topic_acls = entries(parsed, &[Write, Describe, Create])?;
        let transactional_acls = entries(parsed, &[Write, Describe])?;
        for filter in resource_filters(parsed, true)? {
            match filter.resource_type {
                ResourceType::Topic => {
                    map.insert(filter, topic_acls.clone());
                }
                ResourceType::TransactionalId => {
                    map.insert(filter, transactional_acls.clone());
                }
                _ => {}
            }
        }
        if parsed.has("idempotent") {
            let cluster = Pattern {
                resource_type: ResourceType::Cluster,
                name: CLUSTER_NAME.into(),
                pattern_type: PatternType::Literal,
            };
            map.insert(cluster, entries(parsed, &[IdempotentWrite])?);
        }
    }
    if consumer {
        use AclOperation::{Describe, Read};
        let topic_acls = entries(parsed, &[Read, Describe])?;
        let group_acls = entries(parsed, &[Read])?;
        for filter in resource_filters(parsed, true)? {
            let acls = match filter.resource_type {
                ResourceType::Topic => &topic_acls,
                ResourceType::Group => &group_acls,
                _ => continue,
            };
            map.entry(filter).or_default().extend(acls.iter().cloned());
        }
    }
    validate_operations(&map)?;
    Ok(map)
}

/// `validateOperation`: each entry's operation must be one its resource type supports, or ALL.
fn validate_operations(map: &AclMap) -> Result<(), Failure> {
    for (pattern, acls) in map {
        // Kafka's `AclEntry.supportedOperations`.
        let supported = kcoord_acl::supported_operations(pattern.resource_type);
        if acls
            .iter()
            .any(|acl| acl.operation != AclOperation::All && !supported.contains(&acl.operation))
        {
            let names: Vec<&str> = supported
                .iter()
                .chain([AclOperation::All].iter())
                .map(|op| op.name())
                .collect();
            return Err(Failure::Usage(format!(
                "ResourceType {} only supports operations [{}]",
                pattern.resource_type,
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// `getResourceToAcls`: what `--add` adds.
fn resource_to_acls(parsed: &Parsed) -> Result<AclMap, Failure> {
    let pattern_type = pattern_type(parsed)?;
    if !matches!(pattern_type, PatternType::Literal | PatternType::Prefixed) {
        return Err(Failure::Usage(format!(
            "A '--resource-pattern-type' value of '{pattern_type}' is not valid when adding acls."
        )));
    }
    let map = filter_to_acls(parsed)?;
    if map.values().any(BTreeSet::is_empty) {
        return Err(Failure::Usage(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
                .into(),
        ));
    }
    Ok(map)
}

fn execution(e: impl fmt::Display) -> Failure {
    Failure::Execution(e.to_string())
}

fn say(out: &mut dyn Write, text: impl fmt::Display) -> Result<(), Failure> {
    writeln!(out, "{text}").map_err(execution)
}

/// The entries, one per line, each after a tab.
fn entry_lines(acls: &BTreeSet<Entry>) -> String {
    acls.iter()
        .map(|acl| format!("\t{acl}"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn add(client: &Client, parsed: &Parsed, out: &mut dyn Write) -> Result<(), Failure> {
    for (pattern, acls) in resource_to_acls(parsed)? {
        let existing: BTreeSet<AclBinding> = client
            .describe_acls(&pattern_filter(&pattern))
            .await
            .map_err(execution)?
            .into_iter()
            .collect();
        let mut new = BTreeSet::new();
        for acl in acls {
            let binding = binding(&pattern, &acl);
            if existing.contains(&binding) {
                say(out, format_args!("Acl {binding} already exists."))?;
            } else {
                new.insert(acl);
            }
        }
        if new.is_empty() {
            continue;
        }
        say(
            out,
            format_args!(
                "Adding ACLs for resource `{pattern}`: \n {}\n",
                entry_lines(&new)
            ),
        )?;
        let bindings: Vec<AclBinding> = new.iter().map(|acl| binding(&pattern, acl)).collect();
        for result in client.create_acls(&bindings).await.map_err(execution)? {
            result.map_err(execution)?;
        }
    }
    Ok(())
}

/// `confirmAction`: yes with `--force`, else the question on stdout and a `y` from stdin.
fn confirm(
    parsed: &Parsed,
    question: &str,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<bool, Failure> {
    if parsed.has("force") {
        return Ok(true);
    }
    say(out, question)?;
    out.flush().map_err(execution)?;
    let mut answer = String::new();
    input.read_line(&mut answer).map_err(execution)?;
    Ok(answer
        .trim_end_matches(['\r', '\n'])
        .eq_ignore_ascii_case("y"))
}

async fn remove(
    client: &Client,
    parsed: &Parsed,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    for (pattern, acls) in filter_to_acls(parsed)? {
        let (question, filters) = if acls.is_empty() {
            (
                format!("Are you sure you want to delete all ACLs for resource filter `{pattern}`? (y/n)"),
                vec![pattern_filter(&pattern)],
            )
        } else {
            (
                format!(
                    "Are you sure you want to remove ACLs: \n {}\n from resource filter `{pattern}`? (y/n)",
                    entry_lines(&acls)
                ),
                acls.iter().map(|acl| entry_filter(&pattern, acl)).collect(),
            )
        };
        if confirm(parsed, &question, input, out)? {
            for result in client.delete_acls(&filters).await.map_err(execution)? {
                result.map_err(execution)?;
            }
        }
    }
    Ok(())
}

fn print_resource_acls(map: &AclMap, out: &mut dyn Write) -> Result<(), Failure> {
    for (pattern, acls) in map {
        say(
            out,
            format_args!(
                "Current ACLs for resource `{pattern}`:\n{}\n",
                entry_lines(acls)
            ),
        )?;
    }
    Ok(())
}

async fn list(client: &Client, parsed: &Parsed, out: &mut dyn Write) -> Result<(), Failure> {
    let filters = resource_filters(parsed, false)?;
    let list_principals = principals(parsed, "principal")?;
    let mut bindings = Vec::new();
    if filters.is_empty() {
        bindings = client
            .describe_acls(&AclBindingFilter::any())
            .await
            .map_err(execution)?;
    } else {
        for filter in &filters {
            bindings.extend(
                client
                    .describe_acls(&pattern_filter(filter))
                    .await
                    .map_err(execution)?,
            );
        }
    }
    let mut map = AclMap::new();
    for b in bindings {
        map.entry(Pattern {
            resource_type: b.resource_type,
            name: b.resource_name,
            pattern_type: b.pattern_type,
        })
        .or_default()
        .insert(Entry {
            principal: b.principal,
            host: b.host,
            operation: b.operation,
            permission: b.permission,
        });
    }
    if list_principals.is_empty() {
        return print_resource_acls(&map, out);
    }
    for principal in &list_principals {
        say(out, format_args!("ACLs for principal `{principal}`"))?;
        let filtered: AclMap = map
            .iter()
            .map(|(pattern, acls)| {
                let mine: BTreeSet<Entry> = acls
                    .iter()
                    .filter(|acl| &acl.principal == principal)
                    .cloned()
                    .collect();
                (pattern.clone(), mine)
            })
            .filter(|(_, acls)| !acls.is_empty())
            .collect();
        print_resource_acls(&filtered, out)?;
    }
    Ok(())
}

async fn execute(
    action: Action,
    parsed: &Parsed,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    // Checked before connecting, so that a usage error needs no server (Kafka creates its
    // Admin first, which connects lazily).
    match action {
        Action::Add => drop(resource_to_acls(parsed)?),
        Action::Remove => drop(filter_to_acls(parsed)?),
        Action::List => drop(resource_filters(parsed, false)?),
    }
    // With --bootstrap-controller the Admin client talks to the controller listener, which
    // serves the ACL APIs too.
    let bootstrap = parsed
        .value("bootstrap-server")
        .or_else(|| parsed.value("bootstrap-controller"))
        .unwrap_or_default();
    let (config, _) =
        crate::command_config::load("kafka-acls", parsed.value("command-config"), &[])
            .map_err(Failure::Execution)?;
    let client = Client::connect(bootstrap, config)
        .await
        .map_err(execution)?;
    match action {
        Action::Add => add(&client, parsed, out).await,
        Action::Remove => remove(&client, parsed, input, out).await,
        Action::List => list(&client, parsed, out).await,
    }
}

/// Runs the tool with `args` (without the program name), answering prompts from `input`, and
/// returns the exit status.
pub fn run(
    args: impl IntoIterator<Item = String>,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let args: Vec<String> = args.into_iter().collect();
    let outcome = options::parse(&args)
        .map_err(Failure::from)
        .and_then(|parsed| {
            if args.is_empty() || parsed.has("help") {
                return Err(Failure::Usage(
                    "This tool helps to manage acls on kafka.".into(),
                ));
            }
            if parsed.has("version") {
                return writeln!(out, "{} (kcoord)", env!("CARGO_PKG_VERSION")).map_err(execution);
            }
            let action = options::check(&parsed)?;
            let runtime = crate::runtime().map_err(execution)?;
            runtime.block_on(execute(action, &parsed, input, out))
        });
    let code = match outcome {
        Ok(()) => 0,
        Err(Failure::Usage(message)) => {
            let _ = write!(err, "{message}\n{USAGE}\n{}\n", crate::command_config::HELP);
            1
        }
        Err(Failure::Execution(message)) => {
            let _ = writeln!(out, "Error while executing ACL command: {message}");
            1
        }
    };
    let _ = out.flush();
    code
}

#[cfg(test)]
mod tests;
