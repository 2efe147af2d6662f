//! Classic groups as their last GroupMetadata record (coordinator record type 2) left them.
//!
//! Kafka keeps a classic group's live state (who is rejoining, who waits for a SyncGroup)
//! only in memory and writes the group when a generation completes, when a static member is
//! replaced, and when the group becomes empty; after a restart the group comes back from this
//! record, Stable with its members or Empty. The coordinator rebuilds its in-memory groups from
//! this image when it loads.
use std::collections::BTreeMap;

use kcoord_wire::records::{GroupMetadataKey, GroupMetadataValue};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassicGroupsImage {
    groups: BTreeMap<String, GroupMetadataValue>,
}

impl ClassicGroupsImage {
    pub fn get(&self, group_id: &str) -> Option<&GroupMetadataValue> {
        self.groups.get(group_id)
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Every group with its last record, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &GroupMetadataValue)> {
        self.groups.iter().map(|(id, value)| (id.as_str(), value))
    }

    pub(crate) fn replay(&mut self, key: &GroupMetadataKey, value: Option<&GroupMetadataValue>) {
        match value {
            Some(value) => {
                self.groups.insert(key.group.clone(), value.clone());
            }
            None => {
                self.groups.remove(&key.group);
            }
        }
    }
}
