//! What `AclCommand` builds from its options, without a server.

use super::*;

fn parsed(list: &[&str]) -> Parsed {
    let args: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    options::parse(&args).unwrap()
}

fn pattern(resource_type: ResourceType, name: &str, pattern_type: PatternType) -> Pattern {
    Pattern {
        resource_type,
        name: name.into(),
        pattern_type,
    }
}

fn allow(principal: &str, operation: AclOperation) -> Entry {
    Entry {
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission: AclPermissionType::Allow,
    }
}

#[test]
fn patterns_and_entries_print_as_kafkas_to_string() {
    let p = pattern(ResourceType::TransactionalId, "tx", PatternType::Prefixed);
    assert_eq!(
        p.to_string(),
        "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=PREFIXED)"
    );
    assert_eq!(
        allow("User:bob", AclOperation::IdempotentWrite).to_string(),
        "(principal=User:bob, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)"
    );
    assert_eq!(
        binding(&p, &allow("User:bob", AclOperation::Read)).to_string(),
        "(pattern=ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=PREFIXED), entry=(principal=User:bob, host=*, operation=READ, permissionType=ALLOW))"
    );
}

#[test]
fn operations_are_read_in_pascal_case_or_any_case_without_underscores() {
    assert_eq!(operation("Read"), AclOperation::Read);
    assert_eq!(operation("read"), AclOperation::Read);
    assert_eq!(operation("IdempotentWrite"), AclOperation::IdempotentWrite);
    assert_eq!(operation("IDEMPOTENTWRITE"), AclOperation::IdempotentWrite);
    // Kafka's map has no underscored names.
    assert_eq!(operation("IDEMPOTENT_WRITE"), AclOperation::Unknown);
    assert_eq!(operation("Fly"), AclOperation::Unknown);
}

#[test]
fn allow_and_deny_entries_cross_principals_operations_and_hosts() {
    let map = filter_to_acls(&parsed(&[
        "--add",
        "--topic",
        " orders ",
        "--allow-principal",
        "User:alice",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--operation",
        "Write",
        "--deny-principal",
        "User:mallory",
        "--deny-host",
        "10.0.0.1",
        "--deny-host",
        "10.0.0.2",
    ]))
    .unwrap();
    let acls = &map[&pattern(ResourceType::Topic, "orders", PatternType::Literal)];
    // 2 principals x 2 operations x host * allowed, 1 x 2 x 2 hosts denied.
    assert_eq!(acls.len(), 8);
    assert!(acls.contains(&allow("User:bob", AclOperation::Write)));
    assert!(acls.contains(&Entry {
        principal: "User:mallory".into(),
        host: "10.0.0.2".into(),
        operation: AclOperation::Read,
        permission: AclPermissionType::Deny,
    }));
    // No --operation means ALL.
    let map = filter_to_acls(&parsed(&[
        "--add",
        "--group",
        "g",
        "--allow-principal",
        "User:a",
    ]))
    .unwrap();
    assert_eq!(
        map[&pattern(ResourceType::Group, "g", PatternType::Literal)],
        BTreeSet::from([allow("User:a", AclOperation::All)])
    );
}

#[test]
fn producer_and_consumer_expand_as_acl_command_does() {
    let map = filter_to_acls(&parsed(&[
        "--add",
        "--producer",
        "--consumer",
        "--topic",
        "t",
        "--group",
        "g",
        "--transactional-id",
        "tx",
        "--idempotent",
        "--allow-principal",
        "User:app",
    ]))
    .unwrap();
    use AclOperation::*;
    let ops = |p: Pattern| -> Vec<AclOperation> {
        let mut ops: Vec<_> = map[&p].iter().map(|e| e.operation).collect();
        ops.sort();
        ops
    };
    assert_eq!(
        ops(pattern(ResourceType::Topic, "t", PatternType::Literal)),
        vec![Read, Write, Create, Describe]
    );
    assert_eq!(
        ops(pattern(ResourceType::Group, "g", PatternType::Literal)),
        vec![Read]
    );
    assert_eq!(
        ops(pattern(
            ResourceType::TransactionalId,
            "tx",
            PatternType::Literal
        )),
        vec![Write, Describe]
    );
    assert_eq!(
        ops(pattern(
            ResourceType::Cluster,
            "kafka-cluster",
            PatternType::Literal
        )),
        vec![IdempotentWrite]
    );
    assert_eq!(map.len(), 4);
}

#[test]
fn add_checks_pattern_types_principals_and_operations_with_kafkas_messages() {
    assert_eq!(
        resource_to_acls(&parsed(&[
            "--add",
            "--topic",
            "t",
            "--allow-principal",
            "User:a",
            "--resource-pattern-type",
            "match"
        ])),
        Err(Failure::Usage(
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.".into()
        ))
    );
    assert_eq!(
        resource_to_acls(&parsed(&["--add", "--topic", "t"])),
        Err(Failure::Usage(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
                .into()
        ))
    );
    assert_eq!(
        resource_to_acls(&parsed(&[
            "--add",
            "--group",
            "g",
            "--allow-principal",
            "User:a",
            "--operation",
            "Write"
        ])),
        Err(Failure::Usage(
            "ResourceType GROUP only supports operations [READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS, ALL]".into()
        ))
    );
    assert_eq!(
        resource_to_acls(&parsed(&["--add", "--allow-principal", "User:a"])),
        Err(Failure::Usage("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>".into()))
    );
    assert_eq!(
        resource_to_acls(&parsed(&[
            "--add",
            "--topic",
            "t",
            "--allow-principal",
            "alice"
        ])),
        Err(Failure::Execution(
            "expected a string in format principalType:principalName but got alice".into()
        ))
    );
    assert_eq!(
        pattern_type(&parsed(&["--resource-pattern-type", "weird"])),
        Err(Failure::Execution(
            "Cannot parse argument 'weird' of option resource-pattern-type".into()
        ))
    );
    assert_eq!(
        pattern_type(&parsed(&["--resource-pattern-type", "Prefixed"])),
        Ok(PatternType::Prefixed)
    );
}

#[test]
fn the_cluster_is_a_resource_only_for_literal_patterns() {
    let filters = resource_filters(&parsed(&["--list", "--cluster"]), false).unwrap();
    assert_eq!(
        filters,
        vec![pattern(
            ResourceType::Cluster,
            "kafka-cluster",
            PatternType::Literal
        )]
    );
    let filters = resource_filters(
        &parsed(&["--list", "--cluster", "--resource-pattern-type", "any"]),
        false,
    )
    .unwrap();
    assert!(filters.is_empty());
}

#[test]
fn help_and_usage_errors_go_to_stderr_with_status_1_and_need_no_server() {
    let run_with = |args: &[&str]| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(
            args.iter().map(|s| s.to_string()),
            &mut &b""[..],
            &mut out,
            &mut err,
        );
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    };
    let (code, out, err) = run_with(&[]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        err.starts_with("This tool helps to manage acls on kafka.\nOption"),
        "{err}"
    );
    assert!(err.contains("security.protocol="), "{err}");
    let (code, _, err) = run_with(&["--bootstrap-server", "127.0.0.1:1", "--add", "--topic", "t"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("You must specify one of: --allow-principal, --deny-principal"),
        "{err}"
    );
    let (code, out, _) = run_with(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.contains("(kcoord)"));
}
