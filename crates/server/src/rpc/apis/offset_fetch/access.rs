//! OffsetFetch's authorization questions, each asked once per name.

use std::collections::HashMap;

use crate::rpc::authorize::{authorize, AclOperation, ResourceType};
use crate::state::RequestContext;

/// DESCRIBE on groups and topics, asked once per name (Kafka asks per entry; the answer is
/// the same).
pub(super) struct Access<'c, 'a> {
    ctx: &'c RequestContext<'a>,
    groups: HashMap<String, bool>,
    topics: HashMap<String, bool>,
}

impl<'c, 'a> Access<'c, 'a> {
    pub(super) fn new(ctx: &'c RequestContext<'a>) -> Self {
        Access {
            ctx,
            groups: HashMap::new(),
            topics: HashMap::new(),
        }
    }

    pub(super) fn group(&mut self, id: &str) -> bool {
        Self::ask(self.ctx, &mut self.groups, ResourceType::Group, id)
    }

    pub(super) fn topic(&mut self, name: &str) -> bool {
        Self::ask(self.ctx, &mut self.topics, ResourceType::Topic, name)
    }

    fn ask(
        ctx: &RequestContext<'_>,
        seen: &mut HashMap<String, bool>,
        resource: ResourceType,
        name: &str,
    ) -> bool {
        if let Some(allowed) = seen.get(name) {
            return *allowed;
        }
        let allowed = authorize(ctx, AclOperation::Describe, resource, name);
        seen.insert(name.to_owned(), allowed);
        allowed
    }
}
