//! What a storage backend built on [`MemoryPlugin`] needs besides the plugin interface: the
//! `file` plugin lets this one decide when to ask for a push, and keeps the descriptions itself.
use kcoord_plugin_api::Uuid;

use super::{GroupEntry, MemoryPlugin};
use crate::gate::PushState;

impl MemoryPlugin {
    /// Takes `id` as the group's stored description without holding it, as a backend does
    /// for what it found on disk at start-up: the id is not asked for again, and the group is
    /// heard from now (a restart starts its TTL afresh).
    pub fn restore(&self, group_id: &str, id: Uuid) {
        let now = self.clock.now_ms();
        let shard = self.shard(group_id);
        let mut map = shard.lock();
        let mut entry = GroupEntry::new(id, now);
        entry.state = PushState::Stored;
        map.groups.insert(group_id.into(), entry);
        shard.republish(&mut map, group_id);
    }

    /// When the group was last heard from (ms), or `None` once it is forgotten (expired or
    /// deleted).
    pub fn last_heard(&self, group_id: &str) -> Option<u64> {
        let shard = self.shard(group_id);
        let map = shard.lock();
        let entry = map.groups.get(group_id)?;
        let last_seen = shard.last_seen(group_id, entry);
        (!self.expired_since(last_seen, self.clock.now_ms())).then_some(last_seen)
    }

    /// Whether `id` is the group's current id and settled as stored: after a `set_topology`
    /// that answered `Ok`, `false` means the push was for a superseded id and nothing was kept.
    pub fn holds(&self, group_id: &str, id: Uuid) -> bool {
        let shard = self.shard(group_id);
        let map = shard.lock();
        map.groups
            .get(group_id)
            .is_some_and(|e| e.current_id == id && e.state == PushState::Stored)
    }
}
