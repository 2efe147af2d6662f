//! `Acls`: the ACLs of the metadata log, by id (as `AccessControlEntryRecord` and
//! `RemoveAccessControlEntryRecord` name them) and indexed by resource for `authorize`.
//!
//! Kafka keeps one sorted set ordered by resource type and reverse name and walks it from the
//! resource's name. Here each resource type has two maps, one for LITERAL names and one for
//! prefixes, plus the set of prefix lengths in use: the ACLs that can apply to a resource are
//! then the literal entry for its name, the literal `*` entry, and one map lookup per prefix
//! length in use. That is the same set Kafka's walk visits, found without a scan.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

use kcoord_wire::{kafka_uuid, AclOperation};
use thiserror::Error;
use uuid::Uuid;

use crate::binding::AclBinding;
use crate::filter::AclBindingFilter;
use crate::host::HostPattern;
use crate::principal::{split_principal, KafkaPrincipal, USER_TYPE};
use crate::resource::{AclPermissionType, PatternType, ResourceType, WILDCARD_RESOURCE};

/// Kafka's limit on the records of one CreateAcls or DeleteAcls (`MAX_RECORDS_PER_USER_OP`).
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;

/// A record that does not fit the store: the metadata log is corrupt.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AclStoreError {
    #[error("An ACL with ID {} already exists.", kafka_uuid(.0))]
    DuplicateId(Uuid),
    #[error("Unable to add the ACL with ID {} because the same ACL is already stored", kafka_uuid(.0))]
    DuplicateAcl(Uuid),
    #[error("ID {} not found in aclsById.", kafka_uuid(.0))]
    UnknownId(Uuid),
}

/// Every ACL, by id and by resource. Cloning copies it (for a published image).
#[derive(Debug, Clone, Default)]
pub struct Acls {
    by_id: HashMap<Uuid, AclBinding>,
    bindings: HashSet<AclBinding>,
    sections: HashMap<ResourceType, Section>,
}

/// The ACLs of one resource type.
#[derive(Debug, Clone, Default)]
struct Section {
    literal: BTreeMap<String, Vec<CompiledAcl>>,
    /// PREFIXED ACLs, and ACLs of any other pattern type (only a corrupt record holds one),
    /// which Kafka's walk also treats as prefixes.
    prefixed: BTreeMap<String, Vec<CompiledAcl>>,
    /// How many prefixed names have each byte length.
    prefix_lengths: BTreeMap<usize, usize>,
}

/// An ACL with its principal and host parsed once, for `authorize`.
#[derive(Debug, Clone)]
pub(crate) struct CompiledAcl {
    id: Uuid,
    principal: PrincipalPattern,
    host: HostPattern,
    pub(crate) operation: AclOperation,
    pub(crate) permission: AclPermissionType,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PrincipalPattern {
    /// `User:*`.
    Everyone,
    One {
        principal_type: String,
        name: String,
    },
    /// No `:`. Kafka fails the authorization that meets one; here it matches nobody.
    Unparseable,
}

impl PrincipalPattern {
    fn compile(principal: &str) -> PrincipalPattern {
        match split_principal(principal) {
            Some((USER_TYPE, "*")) => PrincipalPattern::Everyone,
            Some((principal_type, name)) => PrincipalPattern::One {
                principal_type: principal_type.to_owned(),
                name: name.to_owned(),
            },
            None => PrincipalPattern::Unparseable,
        }
    }

    fn matches(&self, session: &KafkaPrincipal) -> bool {
        match self {
            PrincipalPattern::Everyone => true,
            PrincipalPattern::One {
                principal_type,
                name,
            } => *principal_type == session.principal_type && *name == session.name,
            PrincipalPattern::Unparseable => false,
        }
    }
}

impl CompiledAcl {
    fn compile(id: Uuid, acl: &AclBinding) -> CompiledAcl {
        CompiledAcl {
            id,
            principal: PrincipalPattern::compile(&acl.principal),
            host: HostPattern::compile(&acl.host),
            operation: acl.operation,
            permission: acl.permission,
        }
    }

    /// Whether this ACL is about this session (its principal or `User:*`, from its host).
    pub(crate) fn applies_to(&self, principal: &KafkaPrincipal, client: IpAddr) -> bool {
        self.principal.matches(principal) && self.host.matches(client)
    }

    pub(crate) fn id(&self) -> Uuid {
        self.id
    }
}

impl Section {
    fn bucket_mut(&mut self, acl: &AclBinding) -> &mut Vec<CompiledAcl> {
        if acl.pattern_type == PatternType::Literal {
            return self.literal.entry(acl.resource_name.clone()).or_default();
        }
        let bucket = self.prefixed.entry(acl.resource_name.clone()).or_default();
        if bucket.is_empty() {
            *self
                .prefix_lengths
                .entry(acl.resource_name.len())
                .or_default() += 1;
        }
        bucket
    }

    fn remove(&mut self, id: Uuid, acl: &AclBinding) {
        let map = if acl.pattern_type == PatternType::Literal {
            &mut self.literal
        } else {
            &mut self.prefixed
        };
        let Some(bucket) = map.get_mut(&acl.resource_name) else {
            return;
        };
        bucket.retain(|compiled| compiled.id != id);
        if !bucket.is_empty() {
            return;
        }
        map.remove(&acl.resource_name);
        if acl.pattern_type != PatternType::Literal {
            let length = acl.resource_name.len();
            if let Some(count) = self.prefix_lengths.get_mut(&length) {
                *count -= 1;
                if *count == 0 {
                    self.prefix_lengths.remove(&length);
                }
            }
        }
    }

    /// The groups of ACLs whose pattern covers `name`: the literal name, the prefixes of
    /// `name`, and the literal wildcard.
    fn covering<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [CompiledAcl]> + 'a {
        let literal = self.literal.get(name);
        let prefixes = self
            .prefix_lengths
            .range(..=name.len())
            .filter_map(move |(length, _)| name.get(..*length))
            .filter_map(|prefix| self.prefixed.get(prefix));
        let wildcard = if name == WILDCARD_RESOURCE {
            None
        } else {
            self.literal.get(WILDCARD_RESOURCE)
        };
        literal
            .into_iter()
            .chain(prefixes)
            .chain(wildcard)
            .map(Vec::as_slice)
    }
}

impl Acls {
    pub fn new() -> Acls {
        Acls::default()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: Uuid) -> Option<&AclBinding> {
        self.by_id.get(&id)
    }

    /// Whether an equal ACL (all seven fields) is stored, under any id.
    pub fn contains(&self, acl: &AclBinding) -> bool {
        self.bindings.contains(acl)
    }

    /// Every ACL with its id, in no particular order (Kafka's is a hash order too).
    pub fn iter(&self) -> impl Iterator<Item = (Uuid, &AclBinding)> {
        self.by_id.iter().map(|(id, acl)| (*id, acl))
    }

    /// The ACLs a DescribeAcls or DeleteAcls filter selects.
    pub fn matching<'a>(
        &'a self,
        filter: &'a AclBindingFilter,
    ) -> impl Iterator<Item = (Uuid, &'a AclBinding)> + 'a {
        self.iter().filter(|(_, acl)| filter.matches(acl))
    }

    /// Replays an `AccessControlEntryRecord`. Refuses an id already used or an ACL already
    /// stored, as Kafka's `AclCache.addAcl` does.
    pub fn add(&mut self, id: Uuid, acl: AclBinding) -> Result<(), AclStoreError> {
        if self.by_id.contains_key(&id) {
            return Err(AclStoreError::DuplicateId(id));
        }
        if self.bindings.contains(&acl) {
            return Err(AclStoreError::DuplicateAcl(id));
        }
        let compiled = CompiledAcl::compile(id, &acl);
        self.sections
            .entry(acl.resource_type)
            .or_default()
            .bucket_mut(&acl)
            .push(compiled);
        self.bindings.insert(acl.clone());
        self.by_id.insert(id, acl);
        Ok(())
    }

    /// Replays a `RemoveAccessControlEntryRecord`; an unknown id is an error, as in Kafka.
    pub fn remove(&mut self, id: Uuid) -> Result<AclBinding, AclStoreError> {
        let acl = self.by_id.remove(&id).ok_or(AclStoreError::UnknownId(id))?;
        self.bindings.remove(&acl);
        if let Some(section) = self.sections.get_mut(&acl.resource_type) {
            section.remove(id, &acl);
            if section.literal.is_empty() && section.prefixed.is_empty() {
                self.sections.remove(&acl.resource_type);
            }
        }
        Ok(acl)
    }

    /// An id no stored ACL has: `draw` (a random UUID) again until it is new, as Kafka's
    /// `AclControlManager.newAclId`.
    pub fn new_id(&self, mut draw: impl FnMut() -> Uuid) -> Uuid {
        loop {
            let id = draw();
            if !self.by_id.contains_key(&id) {
                return id;
            }
        }
    }

    /// The groups of stored ACLs whose resource pattern covers this resource.
    pub(crate) fn covering<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a [CompiledAcl]> + 'a {
        self.sections
            .get(&resource_type)
            .into_iter()
            .flat_map(move |section| section.covering(name))
    }

    /// Every stored ACL of one resource type, whatever its pattern.
    pub(crate) fn of_type(
        &self,
        resource_type: ResourceType,
    ) -> impl Iterator<Item = (&AclBinding, &CompiledAcl)> {
        self.sections
            .get(&resource_type)
            .into_iter()
            .flat_map(|section| section.literal.values().chain(section.prefixed.values()))
            .flatten()
            .filter_map(|compiled| self.by_id.get(&compiled.id).map(|acl| (acl, compiled)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn topic_acl(name: &str, pattern_type: PatternType) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermissionType::Allow,
        }
    }

    fn covering_ids(acls: &Acls, name: &str) -> Vec<u128> {
        let mut ids: Vec<u128> = acls
            .covering(ResourceType::Topic, name)
            .flatten()
            .map(|acl| acl.id.as_u128())
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn an_acl_added_by_id_is_found_by_id_and_removed_by_id() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("t", PatternType::Literal))
            .unwrap();
        assert_eq!(acls.len(), 1);
        assert_eq!(acls.get(id(1)), Some(&topic_acl("t", PatternType::Literal)));
        assert!(acls.contains(&topic_acl("t", PatternType::Literal)));
        assert_eq!(
            acls.remove(id(1)).unwrap(),
            topic_acl("t", PatternType::Literal)
        );
        assert!(acls.is_empty());
        assert!(!acls.contains(&topic_acl("t", PatternType::Literal)));
        assert_eq!(covering_ids(&acls, "t"), Vec::<u128>::new());
        assert!(acls.sections.is_empty());
    }

    #[test]
    fn a_used_id_or_an_acl_already_stored_is_refused() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("t", PatternType::Literal))
            .unwrap();
        assert_eq!(
            acls.add(id(1), topic_acl("u", PatternType::Literal)),
            Err(AclStoreError::DuplicateId(id(1)))
        );
        assert_eq!(
            acls.add(id(2), topic_acl("t", PatternType::Literal)),
            Err(AclStoreError::DuplicateAcl(id(2)))
        );
        assert_eq!(acls.len(), 1);
    }

    #[test]
    fn removing_an_unknown_id_is_an_error() {
        let mut acls = Acls::new();
        assert_eq!(acls.remove(id(9)), Err(AclStoreError::UnknownId(id(9))));
        assert_eq!(
            AclStoreError::UnknownId(Uuid::nil()).to_string(),
            "ID AAAAAAAAAAAAAAAAAAAAAA not found in aclsById."
        );
    }

    #[test]
    fn covering_finds_the_literal_name_every_prefix_and_the_wildcard() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("foobar", PatternType::Literal))
            .unwrap();
        acls.add(id(2), topic_acl("foo", PatternType::Prefixed))
            .unwrap();
        acls.add(id(3), topic_acl("foobar", PatternType::Prefixed))
            .unwrap();
        acls.add(id(4), topic_acl("*", PatternType::Literal))
            .unwrap();
        acls.add(id(5), topic_acl("foo", PatternType::Literal))
            .unwrap();
        acls.add(id(6), topic_acl("foobarbaz", PatternType::Prefixed))
            .unwrap();
        acls.add(id(7), topic_acl("fa", PatternType::Prefixed))
            .unwrap();
        acls.add(id(8), topic_acl("*", PatternType::Prefixed))
            .unwrap();
        assert_eq!(covering_ids(&acls, "foobar"), vec![1, 2, 3, 4]);
        assert_eq!(covering_ids(&acls, "foo"), vec![2, 4, 5]);
        assert_eq!(covering_ids(&acls, "fab"), vec![4, 7]);
        assert_eq!(covering_ids(&acls, "*x"), vec![4, 8]);
        assert_eq!(covering_ids(&acls, "*"), vec![4, 8]);
    }

    #[test]
    fn prefix_lengths_are_forgotten_when_their_last_prefix_goes() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("ab", PatternType::Prefixed))
            .unwrap();
        acls.add(id(2), topic_acl("cd", PatternType::Prefixed))
            .unwrap();
        acls.remove(id(1)).unwrap();
        let section = &acls.sections[&ResourceType::Topic];
        assert_eq!(section.prefix_lengths.get(&2), Some(&1));
        acls.remove(id(2)).unwrap();
        assert!(acls.sections.is_empty());
    }

    #[test]
    fn a_prefix_that_ends_inside_a_multibyte_character_covers_nothing() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("é", PatternType::Prefixed))
            .unwrap();
        acls.add(id(2), topic_acl("a", PatternType::Prefixed))
            .unwrap();
        assert_eq!(covering_ids(&acls, "éa"), vec![1]);
        assert_eq!(covering_ids(&acls, "ü"), Vec::<u128>::new());
    }

    #[test]
    fn new_ids_are_drawn_again_until_unused() {
        let mut acls = Acls::new();
        acls.add(id(1), topic_acl("t", PatternType::Literal))
            .unwrap();
        let mut draws = vec![id(2), id(1)];
        assert_eq!(acls.new_id(|| draws.pop().unwrap()), id(2));
    }

    #[test]
    fn sections_keep_resource_types_apart() {
        let mut acls = Acls::new();
        let group = AclBinding {
            resource_type: ResourceType::Group,
            ..topic_acl("t", PatternType::Literal)
        };
        acls.add(id(1), group).unwrap();
        assert_eq!(covering_ids(&acls, "t"), Vec::<u128>::new());
        assert_eq!(acls.covering(ResourceType::Group, "t").count(), 1);
    }
}
