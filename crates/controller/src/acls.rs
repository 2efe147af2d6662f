//! CreateAcls and DeleteAcls on the controller, as Kafka's `AclControlManager` decides them:
//! the checks and messages are `kcoord_acl::requests`; this module turns the decisions into
//! `AccessControlEntryRecord`s and `RemoveAccessControlEntryRecord`s, and keeps the index of
//! the ACLs the log holds ([`AclIndex`]) that both decisions read.

use kcoord_acl::requests::{new_acls, plan_delete_acls, validate_create_acls};
use kcoord_acl::{AclApiError, AclBinding, AclBindingFilter, AclCreation, AclStoreError, Acls};
use kcoord_metadata::{Record, RecordAndVersion, SecurityImage};
use kcoord_wire::records::{AccessControlEntryRecord, RemoveAccessControlEntryRecord};
use uuid::Uuid;

/// One creation's result: created (or already there), or why not.
pub type CreateAclResult = Result<(), AclApiError>;

/// One DeleteAcls filter's result: every ACL it matched (and so removed), or why not.
pub type DeleteAclsResult = Result<Vec<AclBinding>, AclApiError>;

/// A change the log made to the ACLs, in the form the authorizer applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AclChange {
    Add(Uuid, AclBinding),
    Remove(Uuid),
}

impl AclChange {
    /// The change an ACL record makes; `None` for any other record.
    pub fn of(record: &Record) -> Option<AclChange> {
        match record {
            Record::AccessControlEntry(r) => Some(AclChange::Add(r.id, binding_of(r))),
            Record::RemoveAccessControlEntry(r) => Some(AclChange::Remove(r.id)),
            _ => None,
        }
    }

    /// Applies it to an ACL index.
    pub fn apply(self, acls: &mut Acls) -> Result<(), AclStoreError> {
        match self {
            AclChange::Add(id, acl) => acls.add(id, acl),
            AclChange::Remove(id) => acls.remove(id).map(drop),
        }
    }
}

/// The ACLs of a replayed image, indexed for decisions.
pub fn index(image: &SecurityImage) -> Result<Acls, AclStoreError> {
    let mut acls = Acls::new();
    for record in image.acls() {
        acls.add(record.id, binding_of(record))?;
    }
    Ok(acls)
}

/// Kafka's `StandardAcl.fromRecord`.
pub fn binding_of(record: &AccessControlEntryRecord) -> AclBinding {
    AclBinding::from_record_fields(
        record.resource_type,
        record.resource_name.clone(),
        record.pattern_type,
        record.principal.clone(),
        record.host.clone(),
        record.operation,
        record.permission_type,
    )
}

fn record_of(id: Uuid, acl: &AclBinding) -> AccessControlEntryRecord {
    AccessControlEntryRecord {
        id,
        resource_type: acl.resource_type.code(),
        resource_name: acl.resource_name.clone(),
        pattern_type: acl.pattern_type.code(),
        principal: acl.principal.clone(),
        host: acl.host.clone(),
        // Every code Kafka defines fits an int8.
        operation: acl.operation.code() as i8,
        permission_type: acl.permission.code(),
        ..Default::default()
    }
}

/// CreateAcls: each creation's result in request order, and one record per new ACL, each
/// under an id that neither the log nor this batch uses (`draw` gives random ones).
pub fn create_acls(
    acls: &Acls,
    creations: &[AclCreation],
    cidr_supported: bool,
    mut draw: impl FnMut() -> Uuid,
) -> (Vec<RecordAndVersion>, Vec<CreateAclResult>) {
    let validated = validate_create_acls(creations, cidr_supported);
    let fresh = match new_acls(acls, validated.iter().filter_map(|r| r.as_ref().ok())) {
        Ok(fresh) => fresh,
        // Too many: every creation that passed validation fails with the operation.
        Err(error) => {
            let results = validated
                .into_iter()
                .map(|r| r.and_then(|_| Err(error.clone())))
                .collect();
            return (Vec::new(), results);
        }
    };
    let mut used = std::collections::HashSet::new();
    let records = fresh
        .iter()
        .map(|acl| {
            let id = acls.new_id(|| loop {
                let id = draw();
                if !used.contains(&id) {
                    return id;
                }
            });
            used.insert(id);
            Record::AccessControlEntry(record_of(id, acl)).at_version(0)
        })
        .collect();
    (
        records,
        validated.into_iter().map(|r| r.map(drop)).collect(),
    )
}

/// DeleteAcls: each filter's result in request order, and one removal record per matched ACL.
pub fn delete_acls(
    acls: &Acls,
    filters: &[AclBindingFilter],
) -> (Vec<RecordAndVersion>, Vec<DeleteAclsResult>) {
    let plan = plan_delete_acls(acls, filters);
    let records = plan
        .removals
        .into_iter()
        .map(|id| {
            Record::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
                id,
                ..Default::default()
            })
            .at_version(0)
        })
        .collect();
    let results = plan
        .results
        .into_iter()
        .map(|r| r.map(|matched| matched.into_iter().map(|(_, acl)| acl).collect()))
        .collect();
    (records, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcoord_wire::ErrorCode;

    fn creation(name: &str, principal: &str) -> AclCreation {
        AclCreation {
            resource_type: 2,
            resource_name: name.into(),
            pattern_type: 3,
            principal: principal.into(),
            host: "*".into(),
            operation: 3,
            permission: 3,
        }
    }

    fn ids() -> impl FnMut() -> Uuid {
        let mut next = 0u128;
        move || {
            next += 1;
            Uuid::from_u128(next)
        }
    }

    fn replay(acls: &mut Acls, records: &[RecordAndVersion]) {
        for r in records {
            AclChange::of(&r.record).unwrap().apply(acls).unwrap();
        }
    }

    #[test]
    fn created_acls_get_one_record_each_and_a_repeated_or_stored_one_none() {
        let mut acls = Acls::new();
        let (records, results) = create_acls(
            &acls,
            &[
                creation("t", "User:a"),
                creation("t", "User:a"),
                creation("u", "User:a"),
            ],
            false,
            ids(),
        );
        assert_eq!(results, vec![Ok(()), Ok(()), Ok(())]);
        assert_eq!(records.len(), 2);
        replay(&mut acls, &records);
        let (records, results) = create_acls(&acls, &[creation("t", "User:a")], false, ids());
        assert_eq!(results, vec![Ok(())]);
        assert!(records.is_empty(), "already stored");
    }

    #[test]
    fn ids_in_use_in_the_log_or_the_batch_are_drawn_again() {
        let mut acls = Acls::new();
        let (records, _) = create_acls(&acls, &[creation("t", "User:a")], false, ids());
        replay(&mut acls, &records);
        // The draw repeats 1 (used in the log) and 2 (used earlier in the batch).
        let mut draws = [1u128, 2, 2, 1, 3].into_iter();
        let (records, _) = create_acls(
            &acls,
            &[creation("u", "User:a"), creation("v", "User:a")],
            false,
            || Uuid::from_u128(draws.next().unwrap_or(99)),
        );
        let ids: Vec<Uuid> = records
            .iter()
            .map(|r| match &r.record {
                Record::AccessControlEntry(e) => e.id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, vec![Uuid::from_u128(2), Uuid::from_u128(3)]);
    }

    #[test]
    fn an_invalid_creation_fails_alone() {
        let acls = Acls::new();
        let (records, results) = create_acls(
            &acls,
            &[creation("t", "nocolon"), creation("t", "User:a")],
            false,
            ids(),
        );
        assert_eq!(
            results[0].as_ref().unwrap_err().error,
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(results[1], Ok(()));
        assert_eq!(records.len(), 1);
    }

    #[test]
    fn deletion_removes_every_matched_acl_once_and_reports_it_per_filter() {
        let mut acls = Acls::new();
        let (records, _) = create_acls(
            &acls,
            &[creation("t", "User:a"), creation("t", "User:b")],
            false,
            ids(),
        );
        replay(&mut acls, &records);
        let any = AclBindingFilter::any();
        let only_a = AclBindingFilter {
            principal: Some("User:a".into()),
            ..AclBindingFilter::any()
        };
        let (records, results) = delete_acls(&acls, &[only_a, any]);
        assert_eq!(records.len(), 2, "User:a's ACL is removed once");
        assert_eq!(results[0].as_ref().unwrap().len(), 1);
        assert_eq!(results[1].as_ref().unwrap().len(), 2);
        replay(&mut acls, &records);
        assert!(acls.is_empty());
    }

    #[test]
    fn the_index_of_an_image_holds_its_acls() {
        let mut acls = Acls::new();
        let (records, _) = create_acls(&acls, &[creation("t", "User:a")], false, ids());
        replay(&mut acls, &records);
        let mut state = kcoord_metadata::LogState::default();
        for (offset, r) in records.iter().enumerate() {
            state.replay(&r.record, offset as u64).unwrap();
        }
        let indexed = index(&state.security).unwrap();
        assert_eq!(indexed.len(), 1);
        assert!(indexed.contains(&binding_of(match &records[0].record {
            Record::AccessControlEntry(e) => e,
            other => panic!("{other:?}"),
        })));
    }
}
