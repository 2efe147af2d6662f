//! The StandardAuthorizer's rules, one test each (docs/kafka-security-facts.md §2).

use std::net::IpAddr;

use uuid::Uuid;

use crate::*;

use AclOperation::*;
use AclPermissionType::{Allow, Deny};
use PatternType::{Literal, Prefixed};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

/// An authorizer and a counter for ACL ids.
struct World {
    authorizer: Authorizer,
    next_id: u128,
}

/// One ACL to add, built field by field.
#[derive(Clone)]
struct Rule {
    acl: AclBinding,
}

fn rule(resource_type: ResourceType, name: &str, pattern_type: PatternType) -> Rule {
    Rule {
        acl: AclBinding {
            resource_type,
            resource_name: name.into(),
            pattern_type,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Read,
            permission: Allow,
        },
    }
}

impl Rule {
    fn principal(mut self, principal: &str) -> Rule {
        self.acl.principal = principal.into();
        self
    }
    fn host(mut self, host: &str) -> Rule {
        self.acl.host = host.into();
        self
    }
    fn op(mut self, operation: AclOperation) -> Rule {
        self.acl.operation = operation;
        self
    }
    fn deny(mut self) -> Rule {
        self.acl.permission = Deny;
        self
    }
}

fn world() -> World {
    World::with(AuthorizerConfig::default())
}

impl World {
    fn with(config: AuthorizerConfig) -> World {
        World {
            authorizer: Authorizer::new(config),
            next_id: 1,
        }
    }

    fn allow_everyone() -> World {
        World::with(AuthorizerConfig {
            allow_everyone_if_no_acl_found: true,
            ..AuthorizerConfig::default()
        })
    }

    fn add(&mut self, rule: Rule) -> Uuid {
        let id = Uuid::from_u128(self.next_id);
        self.next_id += 1;
        self.authorizer.acls_mut().add(id, rule.acl).unwrap();
        id
    }

    fn allows(
        &self,
        principal: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.allows_from(principal, LOCAL, operation, resource_type, name)
    }

    fn allows_from(
        &self,
        principal: &str,
        client: &str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        self.authorizer.authorize(
            &KafkaPrincipal::parse(principal).unwrap(),
            client.parse().unwrap(),
            operation,
            resource_type,
            name,
        )
    }
}

const LOCAL: &str = "127.0.0.1";

fn local() -> IpAddr {
    LOCAL.parse().unwrap()
}

// ---- configuration ----

#[test]
fn super_users_are_allowed_everything_even_against_a_deny() {
    let mut world = World::with(AuthorizerConfig::from_config(Some("User:admin"), None).unwrap());
    world.add(
        rule(Topic, "t", Literal)
            .principal("User:admin")
            .op(All)
            .deny(),
    );
    assert!(world.allows("User:admin", Write, Topic, "t"));
    assert!(world.allows("User:admin", ClusterAction, Cluster, CLUSTER_NAME));
    assert!(!world.allows("User:bob", Write, Topic, "t"));
}

#[test]
fn super_users_match_the_principal_string_exactly_and_case_sensitively() {
    let world =
        World::with(AuthorizerConfig::from_config(Some("User:Admin;User:*"), None).unwrap());
    assert!(world.allows("User:Admin", Read, Topic, "t"));
    assert!(!world.allows("User:admin", Read, Topic, "t"));
    assert!(!world.allows("Group:Admin", Read, Topic, "t"));
    // `User:*` in super.users is no wildcard: only a principal named `*` is super.
    assert!(!world.allows("User:bob", Read, Topic, "t"));
    assert!(world.allows("User:*", Read, Topic, "t"));
}

#[test]
fn super_users_config_is_semicolon_separated_trimmed_and_skips_empty_pieces() {
    let config = AuthorizerConfig::from_config(Some(" User:a ;;\tUser:b; ;"), None).unwrap();
    let mut names: Vec<&str> = config.super_users.iter().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, vec!["User:a", "User:b"]);
    let config = AuthorizerConfig::from_config(Some("User:x y"), None).unwrap();
    assert!(config.super_users.contains("User:x y"));
}

#[test]
fn a_super_users_entry_without_a_colon_is_a_configuration_error() {
    let error = AuthorizerConfig::from_config(Some("User:a;admin"), None).unwrap_err();
    assert_eq!(
        error.0.to_string(),
        "expected a string in format principalType:principalName but got admin"
    );
}

#[test]
fn allow_everyone_is_true_only_for_the_word_true_in_any_case() {
    let allow = |value: Option<&str>| {
        AuthorizerConfig::from_config(None, value)
            .unwrap()
            .allow_everyone_if_no_acl_found
    };
    assert!(!allow(None));
    assert!(allow(Some("true")));
    assert!(allow(Some(" TRUE ")));
    assert!(allow(Some("True")));
    assert!(!allow(Some("yes")));
    assert!(!allow(Some("1")));
    assert!(!allow(Some("")));
}

// ---- the default when no ACL covers the resource ----

#[test]
fn with_no_acls_everyone_is_denied_by_default() {
    let world = world();
    assert!(!world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice", ClusterAction, Cluster, CLUSTER_NAME));
}

#[test]
fn with_no_acls_and_allow_everyone_everyone_is_allowed() {
    let world = World::allow_everyone();
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(world.allows("User:ANONYMOUS", ClusterAction, Cluster, CLUSTER_NAME));
}

#[test]
fn one_acl_for_bob_makes_the_topic_deny_by_default_for_alice_even_with_allow_everyone() {
    let mut world = World::allow_everyone();
    world.add(rule(Topic, "t", Literal).principal("User:bob"));
    assert!(world.allows("User:bob", Read, Topic, "t"));
    assert!(!world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:bob", Write, Topic, "t"));
    assert!(world.allows("User:alice", Read, Topic, "other"));
}

#[test]
fn any_acl_covering_the_resource_ends_the_default_whatever_its_host_operation_or_permission() {
    let mut world = World::allow_everyone();
    world.add(rule(Topic, "a", Literal).host("10.9.9.9"));
    world.add(rule(Topic, "b", Literal).op(Delete));
    world.add(rule(Topic, "c", Literal).principal("User:bob").deny());
    world.add(rule(Topic, "d", Prefixed).principal("User:bob"));
    world.add(rule(Group, "*", Literal).principal("User:bob"));
    for topic in ["a", "b", "c", "dd"] {
        assert!(!world.allows("User:alice", Read, Topic, topic), "{topic}");
    }
    assert!(!world.allows("User:alice", Read, Group, "any-group"));
    assert!(world.allows("User:alice", Read, Topic, "e"));
}

#[test]
fn an_acl_of_another_resource_type_leaves_the_default_in_force() {
    let mut world = World::allow_everyone();
    world.add(rule(Group, "t", Literal).principal("User:bob"));
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice", Read, Group, "t"));
}

#[test]
fn removing_the_last_acl_covering_a_resource_restores_the_default() {
    let mut world = World::allow_everyone();
    let id = world.add(rule(Topic, "t", Literal).principal("User:bob"));
    assert!(!world.allows("User:alice", Read, Topic, "t"));
    world.authorizer.acls_mut().remove(id).unwrap();
    assert!(world.allows("User:alice", Read, Topic, "t"));
}

// ---- allow and deny ----

#[test]
fn an_allow_acl_allows_its_principal_its_operation_on_its_resource() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal));
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice", Write, Topic, "t"));
    assert!(!world.allows("User:alice", Read, Topic, "u"));
    assert!(!world.allows("User:alice", Read, Group, "t"));
    assert!(!world.allows("User:carol", Read, Topic, "t"));
}

#[test]
fn deny_wins_over_allow_on_the_same_resource() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal));
    world.add(rule(Topic, "t", Literal).deny());
    assert!(!world.allows("User:alice", Read, Topic, "t"));
}

#[test]
fn a_deny_on_a_prefix_wins_over_an_allow_on_the_literal_name() {
    let mut world = world();
    world.add(rule(Topic, "payments", Literal).op(All));
    world.add(rule(Topic, "pay", Prefixed).op(Write).deny());
    assert!(!world.allows("User:alice", Write, Topic, "payments"));
    assert!(world.allows("User:alice", Read, Topic, "payments"));
}

#[test]
fn a_deny_on_the_wildcard_wins_over_an_allow_on_the_literal_name() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal));
    world.add(rule(Topic, "*", Literal).deny());
    assert!(!world.allows("User:alice", Read, Topic, "t"));
}

#[test]
fn a_deny_for_everyone_denies_even_a_principal_allowed_by_name() {
    let mut world = world();
    world.add(rule(Group, "g", Literal));
    world.add(rule(Group, "g", Literal).principal("User:*").deny());
    assert!(!world.allows("User:alice", Read, Group, "g"));
}

#[test]
fn a_deny_for_someone_else_does_not_deny_an_allowed_principal() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal));
    world.add(rule(Topic, "t", Literal).principal("User:bob").deny());
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:bob", Read, Topic, "t"));
}

// ---- resource patterns ----

#[test]
fn a_prefixed_acl_covers_every_name_starting_with_it_including_itself() {
    let mut world = world();
    world.add(rule(Topic, "orders-", Prefixed));
    assert!(world.allows("User:alice", Read, Topic, "orders-"));
    assert!(world.allows("User:alice", Read, Topic, "orders-eu"));
    assert!(!world.allows("User:alice", Read, Topic, "orders"));
    assert!(!world.allows("User:alice", Read, Topic, "my-orders-eu"));
}

#[test]
fn a_literal_acl_does_not_cover_names_it_is_a_prefix_of() {
    let mut world = World::allow_everyone();
    world.add(rule(Topic, "orders", Literal).principal("User:bob"));
    assert!(!world.allows("User:alice", Read, Topic, "orders"));
    // `orders-eu` is not covered at all, so the default (allow) applies to everyone.
    assert!(world.allows("User:alice", Read, Topic, "orders-eu"));
    assert!(world.allows("User:bob", Write, Topic, "orders-eu"));
}

#[test]
fn the_literal_wildcard_covers_every_name_of_its_type_only() {
    let mut world = world();
    world.add(rule(Topic, "*", Literal));
    assert!(world.allows("User:alice", Read, Topic, "anything"));
    assert!(world.allows("User:alice", Read, Topic, "*"));
    assert!(!world.allows("User:alice", Read, Group, "anything"));
}

#[test]
fn a_prefixed_star_covers_only_names_starting_with_a_star() {
    let mut world = world();
    world.add(rule(Group, "*", Prefixed));
    assert!(world.allows("User:alice", Read, Group, "*g"));
    assert!(!world.allows("User:alice", Read, Group, "g"));
}

#[test]
fn literal_prefixed_and_wildcard_acls_all_count_for_one_resource() {
    let mut world = world();
    world.add(rule(Topic, "a-b-c", Literal).op(Read));
    world.add(rule(Topic, "a-", Prefixed).op(Write));
    world.add(rule(Topic, "a-b", Prefixed).op(Delete));
    world.add(rule(Topic, "*", Literal).op(Create));
    for op in [Read, Write, Delete, Create, Describe] {
        assert!(world.allows("User:alice", op, Topic, "a-b-c"), "{op:?}");
    }
    assert!(!world.allows("User:alice", Alter, Topic, "a-b-c"));
    assert!(!world.allows("User:alice", Read, Topic, "a-x"));
    assert!(world.allows("User:alice", Write, Topic, "a-x"));
}

// ---- principals and hosts ----

#[test]
fn user_star_matches_every_user_principal_and_other_types_have_no_wildcard() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).principal("User:*"));
    world.add(rule(Topic, "u", Literal).principal("Group:*"));
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(world.allows("User:ANONYMOUS", Read, Topic, "t"));
    // The `User:*` ACL matches every principal, whatever its type.
    assert!(world.allows("Group:x", Read, Topic, "t"));
    assert!(!world.allows("Group:x", Read, Topic, "u"));
    assert!(world.allows("Group:*", Read, Topic, "u"));
}

#[test]
fn the_acl_principal_must_equal_the_session_principal_type_and_name() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).principal("User:alice"));
    assert!(world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:Alice", Read, Topic, "t"));
    assert!(!world.allows("Service:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice2", Read, Topic, "t"));
}

#[test]
fn a_stored_principal_without_a_colon_matches_nobody_but_covers_the_resource() {
    let mut world = World::allow_everyone();
    world.add(rule(Topic, "t", Literal).principal("alice"));
    assert!(!world.allows("User:alice", Read, Topic, "t"));
}

#[test]
fn host_star_matches_every_client_and_a_host_only_its_own_address() {
    let mut world = world();
    world.add(rule(Topic, "any", Literal));
    world.add(rule(Topic, "v4", Literal).host("10.0.0.5"));
    world.add(rule(Topic, "v6", Literal).host("0:0:0:0:0:0:0:1"));
    world.add(rule(Topic, "short-v6", Literal).host("::1"));
    assert!(world.allows_from("User:alice", "10.0.0.5", Read, Topic, "any"));
    assert!(world.allows_from("User:alice", "::1", Read, Topic, "any"));
    assert!(world.allows_from("User:alice", "10.0.0.5", Read, Topic, "v4"));
    assert!(world.allows_from("User:alice", "::ffff:10.0.0.5", Read, Topic, "v4"));
    assert!(!world.allows_from("User:alice", "10.0.0.6", Read, Topic, "v4"));
    assert!(world.allows_from("User:alice", "::1", Read, Topic, "v6"));
    // Kafka compares with the full form Java writes, so `::1` never matches.
    assert!(!world.allows_from("User:alice", "::1", Read, Topic, "short-v6"));
}

#[test]
fn a_cidr_host_matches_clients_in_its_range() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).host("192.168.0.0/16"));
    world.add(rule(Topic, "t", Literal).host("10.0.0.0/8").deny());
    assert!(world.allows_from("User:alice", "192.168.4.2", Read, Topic, "t"));
    assert!(!world.allows_from("User:alice", "192.169.0.1", Read, Topic, "t"));
    assert!(!world.allows_from("User:alice", "10.1.1.1", Read, Topic, "t"));
}

#[test]
fn a_host_name_in_an_acl_never_matches() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).host("localhost"));
    assert!(!world.allows_from("User:alice", "127.0.0.1", Read, Topic, "t"));
}

// ---- operations ----

#[test]
fn read_write_delete_and_alter_allows_imply_describe() {
    for op in [Read, Write, Delete, Alter, Describe] {
        let mut world = world();
        world.add(rule(Topic, "t", Literal).op(op));
        assert!(world.allows("User:alice", Describe, Topic, "t"), "{op:?}");
    }
    for op in [
        Create,
        DescribeConfigs,
        AlterConfigs,
        ClusterAction,
        IdempotentWrite,
    ] {
        let mut world = world();
        world.add(rule(Topic, "t", Literal).op(op));
        assert!(!world.allows("User:alice", Describe, Topic, "t"), "{op:?}");
    }
}

#[test]
fn an_alter_configs_allow_implies_describe_configs_and_nothing_else() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(AlterConfigs));
    assert!(world.allows("User:alice", DescribeConfigs, Topic, "t"));
    assert!(!world.allows("User:alice", Alter, Topic, "t"));
    let mut world = self::world();
    world.add(rule(Topic, "t", Literal).op(Alter));
    assert!(!world.allows("User:alice", AlterConfigs, Topic, "t"));
    assert!(!world.allows("User:alice", DescribeConfigs, Topic, "t"));
}

#[test]
fn there_are_no_other_implications() {
    let mut world = world();
    world.add(rule(Cluster, CLUSTER_NAME, Literal).op(Write));
    world.add(rule(Topic, "t", Literal).op(Create));
    world.add(rule(Topic, "t", Literal).op(Write));
    assert!(!world.allows("User:alice", IdempotentWrite, Cluster, CLUSTER_NAME));
    assert!(world.allows("User:alice", Describe, Cluster, CLUSTER_NAME));
    assert!(!world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice", Alter, Topic, "t"));
}

#[test]
fn a_deny_never_implies_a_deny_of_describe() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(Describe));
    world.add(rule(Topic, "t", Literal).op(Read).deny());
    world.add(rule(Topic, "t", Literal).op(AlterConfigs).deny());
    assert!(world.allows("User:alice", Describe, Topic, "t"));
    assert!(!world.allows("User:alice", Read, Topic, "t"));
    assert!(!world.allows("User:alice", DescribeConfigs, Topic, "t"));
}

#[test]
fn all_matches_every_operation_for_allow_and_for_deny() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(All));
    for op in [
        Read,
        Write,
        Create,
        Delete,
        Alter,
        Describe,
        DescribeConfigs,
        AlterConfigs,
    ] {
        assert!(world.allows("User:alice", op, Topic, "t"), "{op:?}");
    }
    world.add(rule(Topic, "t", Literal).op(All).deny());
    for op in [Read, Describe, AlterConfigs] {
        assert!(!world.allows("User:alice", op, Topic, "t"), "{op:?}");
    }
}

#[test]
fn cluster_action_needs_an_acl_or_a_super_user_like_any_operation() {
    let mut world = world();
    assert!(!world.allows("User:broker", ClusterAction, Cluster, CLUSTER_NAME));
    world.add(
        rule(Cluster, CLUSTER_NAME, Literal)
            .principal("User:broker")
            .op(ClusterAction),
    );
    assert!(world.allows("User:broker", ClusterAction, Cluster, CLUSTER_NAME));
    assert!(!world.allows("User:broker", Alter, Cluster, CLUSTER_NAME));
}

#[test]
fn transactional_ids_are_authorized_like_any_resource() {
    let mut world = world();
    world.add(rule(TransactionalId, "tx-", Prefixed).op(Write));
    assert!(world.allows("User:alice", Write, TransactionalId, "tx-1"));
    assert!(world.allows("User:alice", Describe, TransactionalId, "tx-1"));
    assert!(!world.allows("User:alice", TwoPhaseCommit, TransactionalId, "tx-1"));
}

// ---- the rule that decided ----

#[test]
fn decide_names_the_rule_that_decided() {
    let mut world = World::with(AuthorizerConfig::from_config(Some("User:admin"), None).unwrap());
    let allow = world.add(rule(Topic, "t", Literal));
    let deny = world.add(rule(Topic, "t", Literal).op(Write).deny());
    let decide = |principal: &str, op, name: &str| {
        world.authorizer.decide(
            &KafkaPrincipal::parse(principal).unwrap(),
            local(),
            op,
            Topic,
            name,
        )
    };
    assert_eq!(decide("User:admin", Read, "t"), authorizer::Rule::SuperUser);
    assert_eq!(
        decide("User:alice", Read, "t"),
        authorizer::Rule::MatchingAcl {
            id: allow,
            allowed: true
        }
    );
    assert_eq!(
        decide("User:alice", Write, "t"),
        authorizer::Rule::MatchingAcl {
            id: deny,
            allowed: false
        }
    );
    assert_eq!(decide("User:bob", Read, "t"), authorizer::Rule::DefaultDeny);
    assert_eq!(decide("User:bob", Read, "u"), authorizer::Rule::DefaultDeny);
}

// ---- authorized operations ----

#[test]
fn every_bit_of_a_type_is_kafkas_all_operations_value() {
    assert_eq!(all_operations_bit_field(Topic), 3576);
    assert_eq!(all_operations_bit_field(Group), 3400);
    assert_eq!(all_operations_bit_field(Cluster), 8096);
    assert_eq!(
        all_operations_bit_field(TransactionalId),
        (1 << 8) | (1 << 4) | (1 << 15)
    );
}

#[test]
fn a_super_user_gets_every_supported_operation() {
    let world = World::with(AuthorizerConfig::from_config(Some("User:admin"), None).unwrap());
    let admin = KafkaPrincipal::user("admin");
    for resource_type in [Topic, Group, Cluster] {
        assert_eq!(
            world
                .authorizer
                .authorized_operations(&admin, local(), resource_type, "x"),
            all_operations_bit_field(resource_type)
        );
    }
}

#[test]
fn authorized_operations_has_a_bit_for_each_allowed_operation_with_implications() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(Read));
    world.add(rule(Topic, "t", Literal).op(AlterConfigs));
    let alice = KafkaPrincipal::user("alice");
    let bits = world
        .authorizer
        .authorized_operations(&alice, local(), Topic, "t");
    assert_eq!(bits, (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11));
    assert_eq!(
        AclOperation::from_bit_field(bits),
        Some(vec![Read, Describe, DescribeConfigs, AlterConfigs])
    );
    let bob = KafkaPrincipal::user("bob");
    assert_eq!(
        world
            .authorizer
            .authorized_operations(&bob, local(), Topic, "t"),
        0
    );
}

#[test]
fn authorized_operations_follow_the_default_when_nothing_covers_the_resource() {
    let world = World::allow_everyone();
    let alice = KafkaPrincipal::user("alice");
    assert_eq!(
        world
            .authorizer
            .authorized_operations(&alice, local(), Group, "g"),
        3400
    );
}

// ---- authorize by resource type (idempotent InitProducerId) ----

fn by_type(world: &World, principal: &str, op: AclOperation, resource_type: ResourceType) -> bool {
    world
        .authorizer
        .authorize_by_resource_type(
            &KafkaPrincipal::parse(principal).unwrap(),
            local(),
            op,
            resource_type,
        )
        .unwrap()
}

#[test]
fn by_resource_type_a_write_on_any_one_topic_is_enough() {
    let mut world = world();
    assert!(!by_type(&world, "User:alice", Write, Topic));
    world.add(rule(Topic, "t", Literal).op(Write));
    assert!(by_type(&world, "User:alice", Write, Topic));
    assert!(!by_type(&world, "User:bob", Write, Topic));
}

#[test]
fn by_resource_type_super_users_pass_and_a_default_allow_passes_through_the_probe() {
    let world =
        World::with(AuthorizerConfig::from_config(Some("User:admin"), Some("true")).unwrap());
    assert!(by_type(&world, "User:admin", Write, Topic));
    // No ACL covers a topic named "hardcode", so the default allow answers.
    assert!(by_type(&world, "User:alice", Write, Topic));
}

#[test]
fn by_resource_type_a_wildcard_deny_denies_and_a_wildcard_allow_allows() {
    let mut world = world();
    world.add(rule(Topic, "*", Literal).op(Write));
    assert!(by_type(&world, "User:alice", Write, Topic));
    world.add(rule(Topic, "*", Literal).op(Write).deny());
    world.add(rule(Topic, "t", Literal).op(Write));
    assert!(!by_type(&world, "User:alice", Write, Topic));
}

#[test]
fn by_resource_type_an_allow_must_survive_the_denials() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(Write));
    world.add(rule(Topic, "t", Literal).op(Write).deny());
    assert!(!by_type(&world, "User:alice", Write, Topic));
    world.add(rule(Topic, "pay", Prefixed).op(Write).deny());
    world.add(rule(Topic, "payments", Literal).op(Write));
    world.add(rule(Topic, "pay-eu", Prefixed).op(Write));
    assert!(!by_type(&world, "User:alice", Write, Topic));
    world.add(rule(Topic, "p", Prefixed).op(Write));
    assert!(by_type(&world, "User:alice", Write, Topic));
}

#[test]
fn by_resource_type_counts_all_but_no_implied_operation_and_only_this_session() {
    let mut world = world();
    world.add(rule(Topic, "t", Literal).op(Read));
    world.add(rule(Topic, "u", Literal).op(Write).principal("User:bob"));
    world.add(rule(Topic, "v", Literal).op(Write).host("10.0.0.1"));
    assert!(!by_type(&world, "User:alice", Describe, Topic));
    assert!(!by_type(&world, "User:alice", Write, Topic));
    world.add(rule(Topic, "w", Literal).op(All).principal("User:*"));
    assert!(by_type(&world, "User:alice", Write, Topic));
}

#[test]
fn by_resource_type_refuses_filter_values() {
    let world = world();
    let alice = KafkaPrincipal::user("alice");
    let ask = |op, resource_type| {
        world
            .authorizer
            .authorize_by_resource_type(&alice, local(), op, resource_type)
    };
    assert_eq!(
        ask(Write, ResourceType::Any),
        Err(NotConcrete::AnyResourceType)
    );
    assert_eq!(
        ask(Write, ResourceType::Unknown),
        Err(NotConcrete::UnknownResourceType)
    );
    assert_eq!(ask(Any, Topic), Err(NotConcrete::AnyOperation));
    assert_eq!(ask(Unknown, Topic), Err(NotConcrete::UnknownOperation));
}

// ---- many ACLs ----

/// The rules of §2.2 written as plainly as possible: look at every ACL.
fn reference_authorize(
    acls: &Acls,
    allow_everyone: bool,
    principal: &KafkaPrincipal,
    client: IpAddr,
    op: AclOperation,
    resource_type: ResourceType,
    name: &str,
) -> bool {
    let client_text = java_host_address(client);
    let mut covered = false;
    let mut allowed = false;
    for (_, acl) in acls.iter() {
        let covers = acl.resource_type == resource_type
            && match acl.pattern_type {
                Literal => acl.resource_name == name || acl.resource_name == "*",
                Prefixed => name.starts_with(&acl.resource_name),
                _ => false,
            };
        if !covers {
            continue;
        }
        covered = true;
        let principal_matches = acl.principal == "User:*" || acl.principal == principal.to_string();
        let host_matches = acl.host == "*"
            || acl.host == client_text
            || Cidr::parse(&acl.host).is_ok_and(|cidr| cidr.contains(client));
        let op_matches = acl.operation == All
            || acl.operation == op
            || (acl.permission == Allow
                && ((op == Describe && matches!(acl.operation, Read | Write | Delete | Alter))
                    || (op == DescribeConfigs && acl.operation == AlterConfigs)));
        if principal_matches && host_matches && op_matches {
            if acl.permission == Deny {
                return false;
            }
            allowed = true;
        }
    }
    allowed || (!covered && allow_everyone)
}

/// A small deterministic generator, so the test needs no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % bound as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.next(items.len())]
    }
}

const NAMES: [&str; 12] = [
    "orders",
    "orders-eu",
    "orders-us",
    "ord",
    "o",
    "payments",
    "pay",
    "p",
    "*",
    "audit",
    "audit-log",
    "x",
];
const PRINCIPALS: [&str; 5] = [
    "User:alice",
    "User:bob",
    "User:carol",
    "User:*",
    "Group:ops",
];
const HOSTS: [&str; 4] = ["*", "127.0.0.1", "10.0.0.7", "10.0.0.0/8"];
const OPS: [AclOperation; 7] = [
    Read,
    Write,
    Describe,
    All,
    AlterConfigs,
    DescribeConfigs,
    Delete,
];

fn random_acl(rng: &mut Lcg, serial: usize) -> AclBinding {
    let base = rng.pick(&NAMES);
    // Most ACLs are on names no query asks about, as in a large cluster.
    let name = if rng.next(4) == 0 {
        base.to_owned()
    } else {
        format!("{base}-{serial}")
    };
    AclBinding {
        resource_type: rng.pick(&[Topic, Group, TransactionalId]),
        resource_name: name,
        pattern_type: rng.pick(&[Literal, Literal, Prefixed]),
        principal: (rng.pick(&PRINCIPALS)).to_owned(),
        host: (rng.pick(&HOSTS)).to_owned(),
        operation: rng.pick(&OPS),
        permission: rng.pick(&[Allow, Allow, Allow, Deny]),
    }
}

fn check_against_reference(authorizer: &Authorizer, rng: &mut Lcg) -> usize {
    let mut allowed = 0;
    for _ in 0..20_000 {
        let principal = KafkaPrincipal::parse(rng.pick(&PRINCIPALS)).unwrap();
        let client: IpAddr = rng
            .pick(&["127.0.0.1", "10.0.0.7", "192.168.1.1"])
            .parse()
            .unwrap();
        let op = rng.pick(&[
            Read,
            Write,
            Describe,
            DescribeConfigs,
            AlterConfigs,
            Delete,
            Create,
        ]);
        let resource_type = rng.pick(&[Topic, Group, TransactionalId]);
        let base = rng.pick(&NAMES);
        let name = match rng.next(3) {
            0 => base.to_owned(),
            1 => format!("{base}-{}", rng.next(1200)),
            _ => format!("{base}{}", rng.next(50)),
        };
        let expected = reference_authorize(
            authorizer.acls(),
            authorizer.config().allow_everyone_if_no_acl_found,
            &principal,
            client,
            op,
            resource_type,
            &name,
        );
        let actual = authorizer.authorize(&principal, client, op, resource_type, &name);
        assert_eq!(
            actual, expected,
            "{principal} from {client} {op:?} on {resource_type}:{name}"
        );
        allowed += usize::from(actual);
    }
    allowed
}

#[test]
fn with_a_thousand_acls_every_decision_matches_a_scan_of_all_acls() {
    let mut rng = Lcg(14);
    let mut authorizer = Authorizer::new(AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..AuthorizerConfig::default()
    });
    let mut ids = Vec::new();
    let mut serial = 0;
    while authorizer.acls().len() < 1_000 {
        serial += 1;
        let acl = random_acl(&mut rng, serial);
        if authorizer.acls().contains(&acl) {
            continue;
        }
        let id = Uuid::from_u128(serial as u128);
        authorizer.acls_mut().add(id, acl).unwrap();
        ids.push(id);
    }
    let allowed = check_against_reference(&authorizer, &mut rng);
    // Both answers occur, so the comparison says something.
    assert!(allowed > 1_000 && allowed < 19_000, "{allowed}");

    // Remove every other ACL and compare again: the index forgets what it should.
    for id in ids.iter().step_by(2) {
        authorizer.acls_mut().remove(*id).unwrap();
    }
    assert_eq!(authorizer.acls().len(), 500);
    check_against_reference(&authorizer, &mut rng);
}
