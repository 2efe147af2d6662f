//! CreateAcls, DescribeAcls and DeleteAcls checks (docs/kafka-security-facts.md §2.11, §2.12).

use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::requests::*;
use crate::*;

fn creation() -> AclCreation {
    AclCreation {
        resource_type: ResourceType::Topic.code(),
        resource_name: "t".into(),
        pattern_type: PatternType::Literal.code(),
        principal: "User:alice".into(),
        host: "*".into(),
        operation: AclOperation::Read.code() as i8,
        permission: AclPermissionType::Allow.code(),
    }
}

fn invalid_request(message: &str) -> AclApiError {
    AclApiError {
        error: ErrorCode::INVALID_REQUEST,
        message: Some(message.into()),
    }
}

fn one(creation: AclCreation) -> Result<AclBinding, AclApiError> {
    validate_creation(&creation, false)
}

#[test]
fn a_valid_creation_becomes_its_binding() {
    let acl = one(creation()).unwrap();
    assert_eq!(acl.resource_type, ResourceType::Topic);
    assert_eq!(acl.resource_name, "t");
    assert_eq!(acl.pattern_type, PatternType::Literal);
    assert_eq!(acl.principal, "User:alice");
    assert_eq!(acl.host, "*");
    assert_eq!(acl.operation, AclOperation::Read);
    assert_eq!(acl.permission, AclPermissionType::Allow);
}

#[test]
fn a_creation_with_code_zero_anywhere_closes_the_connection() {
    for field in 0..4 {
        let mut bad = creation();
        match field {
            0 => bad.resource_type = 0,
            1 => bad.pattern_type = 0,
            2 => bad.operation = 0,
            _ => bad.permission = 0,
        }
        assert_eq!(
            check_create_acls_request(&[creation(), bad]),
            Err(UnknownElements),
            "field {field}"
        );
    }
    assert_eq!(check_create_acls_request(&[creation()]), Ok(()));
}

#[test]
fn an_unmapped_code_passes_parsing_and_is_refused_per_creation_as_unknown() {
    let cases = [
        (
            AclCreation {
                resource_type: 99,
                ..creation()
            },
            "Invalid resourceType UNKNOWN",
        ),
        (
            AclCreation {
                pattern_type: 9,
                ..creation()
            },
            "Invalid patternType UNKNOWN",
        ),
        (
            AclCreation {
                operation: 42,
                ..creation()
            },
            "Invalid operation UNKNOWN",
        ),
        (
            AclCreation {
                permission: -5,
                ..creation()
            },
            "Invalid permissionType UNKNOWN",
        ),
    ];
    for (bad, message) in cases {
        assert_eq!(
            check_create_acls_request(std::slice::from_ref(&bad)),
            Ok(())
        );
        assert_eq!(one(bad), Err(invalid_request(message)));
    }
}

#[test]
fn the_resource_type_is_checked_before_the_pattern_type_operation_and_permission() {
    let bad = AclCreation {
        resource_type: 99,
        pattern_type: 9,
        operation: 42,
        permission: 42,
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request("Invalid resourceType UNKNOWN"))
    );
}

#[test]
fn one_creation_with_any_or_match_fails_every_creation_with_unknown_server_error_and_no_message() {
    let unknown_server_error = Err(AclApiError {
        error: ErrorCode::UNKNOWN_SERVER_ERROR,
        message: None,
    });
    let filter_values = [
        AclCreation {
            resource_type: ResourceType::Any.code(),
            ..creation()
        },
        AclCreation {
            pattern_type: PatternType::Match.code(),
            ..creation()
        },
        AclCreation {
            pattern_type: PatternType::Any.code(),
            ..creation()
        },
        AclCreation {
            operation: AclOperation::Any.code() as i8,
            ..creation()
        },
        AclCreation {
            permission: AclPermissionType::Any.code(),
            ..creation()
        },
    ];
    for bad in filter_values {
        let results = validate_create_acls(&[creation(), bad.clone(), creation()], true);
        assert_eq!(results, vec![unknown_server_error.clone(); 3], "{bad:?}");
        assert_eq!(one(bad), unknown_server_error);
    }
}

#[test]
fn a_cluster_acl_must_name_kafka_cluster() {
    let bad = AclCreation {
        resource_type: ResourceType::Cluster.code(),
        resource_name: "my-cluster".into(),
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request(
            "The only valid name for the CLUSTER resource is kafka-cluster"
        ))
    );
    let good = AclCreation {
        resource_type: ResourceType::Cluster.code(),
        resource_name: CLUSTER_NAME.into(),
        ..creation()
    };
    assert!(one(good).is_ok());
}

#[test]
fn the_cluster_name_is_checked_before_the_empty_name() {
    let bad = AclCreation {
        resource_type: ResourceType::Cluster.code(),
        resource_name: String::new(),
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request(
            "The only valid name for the CLUSTER resource is kafka-cluster"
        ))
    );
}

#[test]
fn an_empty_resource_name_is_refused_before_an_unknown_resource_type() {
    let bad = AclCreation {
        resource_type: 99,
        resource_name: String::new(),
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request("Invalid empty resource name"))
    );
}

#[test]
fn a_principal_without_a_colon_is_refused_and_nothing_else_about_it_is_checked() {
    let bad = AclCreation {
        principal: "alice".into(),
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request(
            "Could not parse principal from `alice` (no colon is present separating the \
             principal type from the principal name)"
        ))
    );
    for principal in ["Group:x", "User:", ":x", "User:*"] {
        let odd = AclCreation {
            principal: principal.into(),
            ..creation()
        };
        assert!(one(odd).is_ok(), "{principal}");
    }
}

#[test]
fn an_empty_host_is_refused_and_any_other_host_without_a_slash_is_accepted() {
    let bad = AclCreation {
        host: String::new(),
        ..creation()
    };
    assert_eq!(
        one(bad),
        Err(invalid_request("Host pattern cannot be null or empty"))
    );
    for host in ["*", "10.0.0.1", "0:0:0:0:0:0:0:1", "not an address", "::1"] {
        let odd = AclCreation {
            host: host.into(),
            ..creation()
        };
        assert!(one(odd).is_ok(), "{host}");
    }
}

#[test]
fn a_cidr_host_needs_metadata_version_4_4_iv1() {
    let cidr = AclCreation {
        host: "10.0.0.0/8".into(),
        ..creation()
    };
    assert_eq!(
        validate_creation(&cidr, false),
        Err(AclApiError {
            error: ErrorCode::UNSUPPORTED_VERSION,
            message: Some(
                "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.".into()
            ),
        })
    );
    assert_eq!(validate_creation(&cidr, true).unwrap().host, "10.0.0.0/8");
}

#[test]
fn an_invalid_cidr_host_is_refused_with_the_parsers_reason() {
    let bad = AclCreation {
        host: "10.0.0.0/33".into(),
        ..creation()
    };
    assert_eq!(
        validate_creation(&bad, true),
        Err(invalid_request(
            "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"
        ))
    );
}

#[test]
fn results_are_per_creation_in_request_order() {
    let results = validate_create_acls(
        &[
            creation(),
            AclCreation {
                resource_name: String::new(),
                ..creation()
            },
            creation(),
        ],
        false,
    );
    assert!(results[0].is_ok());
    assert_eq!(
        results[1],
        Err(invalid_request("Invalid empty resource name"))
    );
    assert!(results[2].is_ok());
}

#[test]
fn acls_already_stored_or_repeated_in_the_request_get_no_new_record() {
    let mut acls = Acls::new();
    let stored = one(creation()).unwrap();
    acls.add(Uuid::from_u128(1), stored.clone()).unwrap();
    let fresh = one(AclCreation {
        resource_name: "u".into(),
        ..creation()
    })
    .unwrap();
    let records = new_acls(&acls, [&stored, &fresh, &fresh]).unwrap();
    assert_eq!(records, vec![fresh]);
}

#[test]
fn more_than_ten_thousand_new_acls_fail_the_whole_creation() {
    let acls = Acls::new();
    let bindings: Vec<AclBinding> = (0..=MAX_RECORDS_PER_USER_OP)
        .map(|n| {
            one(AclCreation {
                resource_name: format!("t{n}"),
                ..creation()
            })
            .unwrap()
        })
        .collect();
    assert_eq!(
        new_acls(&acls, &bindings),
        Err(AclApiError {
            error: ErrorCode::UNKNOWN_SERVER_ERROR,
            message: None,
        })
    );
    assert_eq!(
        new_acls(&acls, &bindings[1..]).unwrap().len(),
        MAX_RECORDS_PER_USER_OP
    );
}

// ---- DescribeAcls and DeleteAcls ----

#[test]
fn a_filter_with_code_zero_anywhere_closes_the_connection() {
    assert_eq!(check_acl_filter_codes(1, 1, 1, 1), Ok(()));
    assert_eq!(check_acl_filter_codes(0, 1, 1, 1), Err(UnknownElements));
    assert_eq!(check_acl_filter_codes(1, 0, 1, 1), Err(UnknownElements));
    assert_eq!(check_acl_filter_codes(1, 1, 0, 1), Err(UnknownElements));
    assert_eq!(check_acl_filter_codes(1, 1, 1, 0), Err(UnknownElements));
    // An unmapped code parses (and then matches nothing, or is refused by DeleteAcls).
    assert_eq!(check_acl_filter_codes(99, 1, 1, 1), Ok(()));
}

fn store() -> (Acls, Vec<Uuid>) {
    let mut acls = Acls::new();
    let mut ids = Vec::new();
    for (n, (name, pattern_type)) in [
        ("foo", PatternType::Literal),
        ("*", PatternType::Literal),
        ("fo", PatternType::Prefixed),
        ("bar", PatternType::Literal),
    ]
    .into_iter()
    .enumerate()
    {
        let id = Uuid::from_u128(n as u128 + 1);
        let acl = one(AclCreation {
            resource_name: name.into(),
            pattern_type: pattern_type.code(),
            ..creation()
        })
        .unwrap();
        acls.add(id, acl).unwrap();
        ids.push(id);
    }
    (acls, ids)
}

fn ids_of(result: &Result<Vec<(Uuid, AclBinding)>, AclApiError>) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = result.as_ref().unwrap().iter().map(|(id, _)| *id).collect();
    ids.sort();
    ids
}

#[test]
fn describing_with_match_finds_every_acl_that_applies_to_the_name() {
    let (acls, ids) = store();
    let filter = AclBindingFilter {
        resource_type: ResourceType::Topic,
        resource_name: Some("foo".into()),
        pattern_type: PatternType::Match,
        ..AclBindingFilter::any()
    };
    let mut found: Vec<Uuid> = acls.matching(&filter).map(|(id, _)| id).collect();
    found.sort();
    assert_eq!(found, ids[..3].to_vec());
}

#[test]
fn deleting_with_match_foo_also_deletes_the_wildcard_and_covering_prefixes() {
    let (acls, ids) = store();
    let filter = AclBindingFilter {
        resource_type: ResourceType::Topic,
        resource_name: Some("foo".into()),
        pattern_type: PatternType::Match,
        ..AclBindingFilter::any()
    };
    let plan = plan_delete_acls(&acls, &[filter]);
    assert_eq!(ids_of(&plan.results[0]), ids[..3].to_vec());
    let mut removals = plan.removals.clone();
    removals.sort();
    assert_eq!(removals, ids[..3].to_vec());
}

#[test]
fn an_acl_matched_by_two_filters_is_reported_by_both_and_removed_once() {
    let (acls, ids) = store();
    let plan = plan_delete_acls(&acls, &[AclBindingFilter::any(), AclBindingFilter::any()]);
    assert_eq!(ids_of(&plan.results[0]), ids);
    assert_eq!(ids_of(&plan.results[1]), ids);
    assert_eq!(plan.removals.len(), 4);
}

#[test]
fn a_delete_filter_matching_nothing_succeeds_with_no_acls() {
    let (acls, _) = store();
    let filter = AclBindingFilter {
        principal: Some("User:nobody".into()),
        ..AclBindingFilter::any()
    };
    let plan = plan_delete_acls(&acls, &[filter]);
    assert_eq!(plan.results, vec![Ok(vec![])]);
    assert!(plan.removals.is_empty());
}

#[test]
fn a_delete_filter_with_an_unknown_part_is_refused_alone() {
    let (acls, _) = store();
    let unknown_pattern = AclBindingFilter::from_codes(99, None, 1, None, None, 1, 1);
    let unknown_entry = AclBindingFilter::from_codes(1, None, 1, None, None, 1, 99);
    let plan = plan_delete_acls(
        &acls,
        &[unknown_pattern, unknown_entry, AclBindingFilter::any()],
    );
    assert_eq!(
        plan.results[0],
        Err(invalid_request("Unknown patternFilter."))
    );
    assert_eq!(
        plan.results[1],
        Err(invalid_request("Unknown entryFilter."))
    );
    assert_eq!(ids_of(&plan.results[2]).len(), 4);
    assert_eq!(plan.removals.len(), 4);
}

#[test]
fn more_than_ten_thousand_removals_fail_every_filter_and_remove_nothing() {
    let mut acls = Acls::new();
    for n in 0..=MAX_RECORDS_PER_USER_OP {
        let acl = one(AclCreation {
            resource_name: format!("t{n}"),
            ..creation()
        })
        .unwrap();
        acls.add(Uuid::from_u128(n as u128 + 1), acl).unwrap();
    }
    let nothing = AclBindingFilter {
        principal: Some("User:nobody".into()),
        ..AclBindingFilter::any()
    };
    let plan = plan_delete_acls(&acls, &[nothing, AclBindingFilter::any()]);
    let error = invalid_request("Cannot remove more than 10000 acls in a single delete operation.");
    assert_eq!(plan.results, vec![Err(error.clone()), Err(error)]);
    assert!(plan.removals.is_empty());
}

#[test]
fn an_api_error_prints_its_code_name_and_message() {
    assert_eq!(
        invalid_request("Invalid empty resource name").to_string(),
        "INVALID_REQUEST: Invalid empty resource name"
    );
}
