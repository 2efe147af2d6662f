//! ACLs (metadata records 18 and 19) and SCRAM credentials (11 and 22), as Kafka's
//! `AclControlManager` and `ScramControlManager` replay them. The records are kept as they are:
//! the authorizer (`kcoord-acl`) and the SASL layer (`kcoord-sasl`) build their own structures
//! from them.
use std::collections::BTreeMap;

use kcoord_wire::records::{
    AccessControlEntryRecord, RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
};
use uuid::Uuid;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecurityImage {
    acls: BTreeMap<Uuid, AccessControlEntryRecord>,
    /// By user name, then mechanism code (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
    credentials: BTreeMap<(String, i8), UserScramCredentialRecord>,
}

impl SecurityImage {
    /// Every ACL, by id.
    pub fn acls(&self) -> impl Iterator<Item = &AccessControlEntryRecord> {
        self.acls.values()
    }

    pub fn acl(&self, id: Uuid) -> Option<&AccessControlEntryRecord> {
        self.acls.get(&id)
    }

    /// Every SCRAM credential, by user and mechanism.
    pub fn credentials(&self) -> impl Iterator<Item = &UserScramCredentialRecord> {
        self.credentials.values()
    }

    pub fn credential(&self, user: &str, mechanism: i8) -> Option<&UserScramCredentialRecord> {
        self.credentials.get(&(user.to_owned(), mechanism))
    }

    /// An id already in use is corruption, as in Kafka (it draws ids until one is free).
    pub(crate) fn replay_acl(&mut self, r: &AccessControlEntryRecord) -> Result<(), String> {
        if self.acls.contains_key(&r.id) {
            return Err(format!("an ACL with id {} already exists", r.id));
        }
        self.acls.insert(r.id, r.clone());
        Ok(())
    }

    pub(crate) fn replay_remove_acl(
        &mut self,
        r: &RemoveAccessControlEntryRecord,
    ) -> Result<(), String> {
        self.acls
            .remove(&r.id)
            .map(drop)
            .ok_or_else(|| format!("no ACL with id {} to remove", r.id))
    }

    /// An upsert: a new credential for the same user and mechanism replaces the old one.
    pub(crate) fn replay_credential(&mut self, r: &UserScramCredentialRecord) {
        self.credentials
            .insert((r.name.clone(), r.mechanism), r.clone());
    }

    pub(crate) fn replay_remove_credential(
        &mut self,
        r: &RemoveUserScramCredentialRecord,
    ) -> Result<(), String> {
        self.credentials
            .remove(&(r.name.clone(), r.mechanism))
            .map(drop)
            .ok_or_else(|| {
                format!(
                    "no SCRAM credential of user {:?} for mechanism {} to remove",
                    r.name, r.mechanism
                )
            })
    }
}

/// Records for tests here and in the snapshot's.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) fn acl(id: u128) -> AccessControlEntryRecord {
        AccessControlEntryRecord {
            id: Uuid::from_u128(id),
            resource_type: 2,
            resource_name: "t".into(),
            pattern_type: 3,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }
    }

    pub(crate) fn credential(
        name: &str,
        mechanism: i8,
        iterations: i32,
    ) -> UserScramCredentialRecord {
        UserScramCredentialRecord {
            name: name.into(),
            mechanism,
            salt: vec![1; 16].into(),
            stored_key: vec![2; 32].into(),
            server_key: vec![3; 32].into(),
            iterations,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{acl, credential};
    use super::*;

    #[test]
    fn acls_are_added_and_removed_by_id_and_a_repeated_or_unknown_id_is_corruption() {
        let mut image = SecurityImage::default();
        image.replay_acl(&acl(1)).unwrap();
        image.replay_acl(&acl(2)).unwrap();
        assert!(image.replay_acl(&acl(1)).is_err());
        assert_eq!(image.acls().count(), 2);
        let remove = |id| RemoveAccessControlEntryRecord {
            id: Uuid::from_u128(id),
            ..Default::default()
        };
        image.replay_remove_acl(&remove(1)).unwrap();
        assert!(image.replay_remove_acl(&remove(1)).is_err());
        assert_eq!(image.acl(Uuid::from_u128(2)), Some(&acl(2)));
        assert_eq!(image.acls().count(), 1);
    }

    #[test]
    fn a_credential_replaces_the_one_of_its_user_and_mechanism_and_removing_a_missing_one_is_corruption(
    ) {
        let mut image = SecurityImage::default();
        image.replay_credential(&credential("alice", 1, 4096));
        image.replay_credential(&credential("alice", 2, 4096));
        image.replay_credential(&credential("alice", 1, 8192));
        assert_eq!(image.credentials().count(), 2);
        assert_eq!(
            image.credential("alice", 1).map(|c| c.iterations),
            Some(8192)
        );
        let remove = RemoveUserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 2,
            ..Default::default()
        };
        image.replay_remove_credential(&remove).unwrap();
        assert!(image.replay_remove_credential(&remove).is_err());
        assert_eq!(image.credential("alice", 2), None);
    }
}
