//! OffsetFetch (key 9), v1-10, after Kafka's `KafkaApis.handleOffsetFetchRequest` and
//! `OffsetMetadataManager.fetchOffsets` / `fetchAllOffsets`.
//!
//! v1-7 carry one group (GroupId + Topics, a null topic list meaning all of them); v8+ a list of
//! groups, each with an optional member id and epoch (v9+), and from v10 topics named by id
//! (an unknown id answers UNKNOWN_TOPIC_ID for each of its partitions). The group's shard
//! checks the member (docs/kafka-coordinator-facts.md §12: admins without a member id pass; otherwise the
//! member must exist and its epoch match) and reads the committed offsets; a partition without
//! one answers offset -1. A group-level error is the group's ErrorCode from v2 (top-level
//! before v8) and each partition's before that. With RequireStable (v7+), a partition
//! with an offset in an open transaction answers UNSTABLE_OFFSET_COMMIT (offset -1), as Kafka's
//! `fetchOffsets` does; the client retries until the transaction is settled.
//!
//! Authorization as Kafka's: DESCRIBE on each group (else the group's error is
//! GROUP_AUTHORIZATION_FAILED), then DESCRIBE on each requested topic (else
//! TOPIC_AUTHORIZATION_FAILED on its partitions, listed after the others); topics the principal
//! may not DESCRIBE are left out of an "all offsets" answer.
//!
//! The request is answered entry by entry as Kafka answers it, but each distinct group is read
//! once: its member checks, the distinct partitions its entries name and, if an entry asks for
//! them, all its offsets, in shard jobs of at most [`OFFSETS_PER_JOB`] items, the shard's lock
//! released between them. An answer given again (a repeated partition's metadata, a repeated
//! "all offsets" entry) is a copy, and the copies may add at most
//! [`crate::rpc::groups::MAX_REPEATED_ANSWER_BYTES`] to the response; a repeat past that answers
//! INVALID_REQUEST (the partition's error, or the group's).

use std::collections::{BTreeMap, HashMap};

use kcoord_metadata::CommittedOffset;
use kcoord_wire::api::ApiKey;
use kcoord_wire::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kcoord_wire::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kcoord_wire::messages::{OffsetFetchRequest, OffsetFetchResponse};
use kcoord_wire::ErrorCode;
use uuid::Uuid;

use crate::rpc::authorize::{AclOperation, ResourceType};
use crate::rpc::groups::RepeatBudget;
use crate::rpc::{serve, Check, Rpc};
use crate::runtime::catalog::TopicsImage;
use crate::state::RequestContext;
use access::Access;
use shard_reads::{fetch, Fetched};

/// OffsetFetch as kcoord serves it.
pub const RPC: Rpc = Rpc::new(ApiKey::OffsetFetch, 1, 10)
    .asks(ASKS)
    .by_group_in_gateway();
const ASKS: &[Check] = &[
    Check::new(AclOperation::Describe, ResourceType::Group),
    Check::new(AclOperation::Describe, ResourceType::Topic),
];

serve!(async handle);

const BATCH_VERSION: i16 = 8;
const TOPIC_ID_VERSION: i16 = 10;
/// From this version a group error is not repeated on every partition.
const TOP_LEVEL_ERROR_VERSION: i16 = 2;
const INVALID_OFFSET: i64 = -1;
const NO_LEADER_EPOCH: i32 = -1;
/// The most member checks, partition lookups or committed offsets one shard job handles; the
/// shard's lock is released and the connection task yields between two jobs.
pub const OFFSETS_PER_JOB: usize = 1024;

pub async fn handle(
    ctx: &RequestContext<'_>,
    req: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    let groups: Vec<OffsetFetchRequestGroup> = if version >= BATCH_VERSION {
        req.groups
    } else {
        // Kafka's `OffsetFetchRequest.groups()`: the single group, no member, epoch -1.
        vec![OffsetFetchRequestGroup {
            group_id: req.group_id,
            member_id: None,
            member_epoch: -1,
            topics: req.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| OffsetFetchRequestTopics {
                        name: t.name,
                        partition_indexes: t.partition_indexes,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }]
    };
    let image = ctx.server.topics.snapshot();
    let mut access = Access::new(ctx);
    let mut plan = Plan::new(&image, &groups, version, &mut access);
    for group in &mut plan.groups {
        group.require_stable = req.require_stable;
        if access.group(&group.id) {
            fetch(&ctx.server.coordinators, group).await;
        } else {
            group.fetched.failed = Some(ErrorCode::GROUP_AUTHORIZATION_FAILED);
        }
    }
    let answers = plan.answer(&image, groups, version, &mut access);
    build(answers, version)
}

/// What a requested topic turned out to be.
#[derive(Clone, Copy)]
enum Resolved {
    /// Index in the group's `topics`.
    Known(usize),
    /// A v10 topic id the catalog does not know: UNKNOWN_TOPIC_ID.
    UnknownId,
    /// A topic the principal may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED.
    Denied,
}

/// The request worked out per distinct group: each group's member checks, partitions and
/// "all offsets" are read once, however many of its entries ask for them (Kafka reads them
/// per entry), and the entries are answered from that, in request order.
struct Plan {
    groups: Vec<GroupPlan>,
    entries: Vec<Entry>,
}

/// One group entry of the request.
struct Entry {
    /// Index in [`Plan::groups`].
    group: usize,
    /// Index in that group's `checks`.
    check: usize,
    /// For each requested topic, what it is. `None`: every offset.
    topics: Option<Vec<Resolved>>,
}

#[derive(Default)]
struct GroupPlan {
    id: String,
    /// Distinct (member id, member epoch) pairs the entries give.
    checks: Vec<(Option<String>, i32)>,
    /// Distinct topic names asked about.
    topics: Vec<String>,
    /// Distinct (topic index, partition) asked about, sorted.
    lookups: Vec<(usize, i32)>,
    /// Whether some entry asks for every offset.
    wants_all: bool,
    /// RequireStable (v7+): an offset an open transaction holds is UNSTABLE_OFFSET_COMMIT.
    require_stable: bool,
    fetched: Fetched,
}

impl Plan {
    fn new(
        image: &TopicsImage,
        groups: &[OffsetFetchRequestGroup],
        version: i16,
        access: &mut Access<'_, '_>,
    ) -> Plan {
        let use_ids = version >= TOPIC_ID_VERSION;
        let mut plans: Vec<GroupPlan> = Vec::new();
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        let mut checks: Vec<HashMap<(Option<&str>, i32), usize>> = Vec::new();
        let mut topics: Vec<HashMap<&str, usize>> = Vec::new();
        let mut entries = Vec::with_capacity(groups.len());
        for g in groups {
            let gi = *by_id.entry(g.group_id.as_str()).or_insert_with(|| {
                plans.push(GroupPlan {
                    id: g.group_id.clone(),
                    ..Default::default()
                });
                checks.push(HashMap::new());
                topics.push(HashMap::new());
                plans.len() - 1
            });
            let plan = &mut plans[gi];
            let check = *checks[gi]
                .entry((g.member_id.as_deref(), g.member_epoch))
                .or_insert_with(|| {
                    plan.checks.push((g.member_id.clone(), g.member_epoch));
                    plan.checks.len() - 1
                });
            let Some(requested) = &g.topics else {
                plan.wants_all = true;
                entries.push(Entry {
                    group: gi,
                    check,
                    topics: None,
                });
                continue;
            };
            let mut resolved = Vec::with_capacity(requested.len());
            for t in requested {
                let name = if use_ids {
                    match image.get_by_id(&t.topic_id) {
                        Some(topic) => topic.name.as_str(),
                        None => {
                            resolved.push(Resolved::UnknownId);
                            continue;
                        }
                    }
                } else {
                    t.name.as_str()
                };
                if !access.topic(name) {
                    resolved.push(Resolved::Denied);
                    continue;
                }
                let ti = *topics[gi].entry(name).or_insert_with(|| {
                    plan.topics.push(name.to_owned());
                    plan.topics.len() - 1
                });
                plan.lookups
                    .extend(t.partition_indexes.iter().map(|p| (ti, *p)));
                resolved.push(Resolved::Known(ti));
            }
            entries.push(Entry {
                group: gi,
                check,
                topics: Some(resolved),
            });
        }
        for plan in &mut plans {
            plan.lookups.sort_unstable();
            plan.lookups.dedup();
        }
        Plan {
            groups: plans,
            entries,
        }
    }

    /// One answer per entry, in request order.
    fn answer(
        self,
        image: &TopicsImage,
        groups: Vec<OffsetFetchRequestGroup>,
        version: i16,
        access: &mut Access<'_, '_>,
    ) -> Vec<OffsetFetchResponseGroup> {
        let use_ids = version >= TOPIC_ID_VERSION;
        let mut budget = RepeatBudget::default();
        // Whether an answer was already given once (a copy of it is a repeat).
        let mut lookup_given: Vec<Vec<bool>> = self
            .groups
            .iter()
            .map(|g| vec![false; g.lookups.len()])
            .collect();
        let mut all_given: Vec<Option<Vec<OffsetFetchResponseTopics>>> =
            self.groups.iter().map(|_| None).collect();
        let mut answers = Vec::with_capacity(groups.len());
        for (entry, group) in self.entries.iter().zip(groups) {
            let plan = &self.groups[entry.group];
            let fetched = &plan.fetched;
            let error = fetched.failed.or_else(|| {
                fetched
                    .checks
                    .get(entry.check)
                    .copied()
                    .filter(|code| *code != ErrorCode::NONE)
            });
            if let Some(code) = error {
                answers.push(group_error(&group, code, version));
                continue;
            }
            let answer = match &entry.topics {
                None => {
                    let all = &mut all_given[entry.group];
                    match all_offsets(image, fetched, all, &mut budget, access, use_ids) {
                        Some(topics) => OffsetFetchResponseGroup {
                            group_id: group.group_id,
                            topics,
                            ..Default::default()
                        },
                        None => group_error(&group, ErrorCode::INVALID_REQUEST, version),
                    }
                }
                Some(resolved) => {
                    let given = &mut lookup_given[entry.group];
                    let topics =
                        requested_topics(plan, &group, resolved, given, &mut budget, use_ids);
                    OffsetFetchResponseGroup {
                        group_id: group.group_id,
                        topics,
                        ..Default::default()
                    }
                }
            };
            answers.push(answer);
        }
        answers
    }
}

/// The answer to an "all offsets" entry: every committed offset of the group (`given` keeps it),
/// or when it was given before, a copy of it if the repeat budget allows.
fn all_offsets(
    image: &TopicsImage,
    fetched: &Fetched,
    given: &mut Option<Vec<OffsetFetchResponseTopics>>,
    budget: &mut RepeatBudget,
    access: &mut Access<'_, '_>,
    use_ids: bool,
) -> Option<Vec<OffsetFetchResponseTopics>> {
    match given {
        None => {
            let mut topics = all_topics(image, &fetched.all, &fetched.all_unstable, use_ids);
            // Topics the principal may not DESCRIBE are left out silently.
            topics.retain(|t| {
                let name = if use_ids {
                    image
                        .get_by_id(&t.topic_id)
                        .map_or("", |topic| topic.name.as_str())
                } else {
                    t.name.as_str()
                };
                access.topic(name)
            });
            *given = Some(topics.clone());
            Some(topics)
        }
        Some(topics) => budget
            .take_with(|| topics.iter().map(topic_bytes).sum())
            .then(|| topics.clone()),
    }
}

/// The answer to an entry that names its topics: the known topics' partitions, then the
/// unknown and denied topics. A partition whose answer was given before (`given`, per lookup)
/// is a repeat: INVALID_REQUEST once the repeat budget is spent.
fn requested_topics(
    plan: &GroupPlan,
    group: &OffsetFetchRequestGroup,
    resolved: &[Resolved],
    given: &mut [bool],
    budget: &mut RepeatBudget,
    use_ids: bool,
) -> Vec<OffsetFetchResponseTopics> {
    let fetched = &plan.fetched;
    let mut topics = Vec::with_capacity(resolved.len());
    let mut unknown = Vec::new();
    for (t, resolved) in group.topics.iter().flatten().zip(resolved) {
        let ti = match *resolved {
            Resolved::Known(ti) => ti,
            Resolved::UnknownId => {
                unknown.push(topic_error(t, ErrorCode::UNKNOWN_TOPIC_ID, use_ids));
                continue;
            }
            Resolved::Denied => {
                unknown.push(topic_error(
                    t,
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    use_ids,
                ));
                continue;
            }
        };
        let partitions = t
            .partition_indexes
            .iter()
            .map(|p| {
                let Ok(i) = plan.lookups.binary_search(&(ti, *p)) else {
                    return found(*p, None);
                };
                if fetched.unstable.get(i) == Some(&true) {
                    return partition_error(*p, ErrorCode::UNSTABLE_OFFSET_COMMIT);
                }
                let committed = fetched.found.get(i).and_then(Option::as_ref);
                let first = !std::mem::replace(&mut given[i], true);
                let bytes = committed.map_or(0, |c| c.metadata.len());
                if first || bytes == 0 || budget.take(bytes) {
                    found(*p, committed)
                } else {
                    partition_error(*p, ErrorCode::INVALID_REQUEST)
                }
            })
            .collect();
        topics.push(OffsetFetchResponseTopics {
            name: if use_ids {
                String::new()
            } else {
                plan.topics[ti].clone()
            },
            topic_id: if use_ids { t.topic_id } else { Uuid::nil() },
            partitions,
            ..Default::default()
        });
    }
    topics.extend(unknown);
    topics
}

/// Every committed offset of a group, by topic (v10: a topic whose id is unknown cannot be
/// named, so it is left out).
fn all_topics(
    image: &TopicsImage,
    offsets: &[(String, i32, CommittedOffset)],
    unstable: &[bool],
    use_ids: bool,
) -> Vec<OffsetFetchResponseTopics> {
    let mut by_topic: BTreeMap<&str, Vec<OffsetFetchResponsePartitions>> = BTreeMap::new();
    for (i, (topic, partition, committed)) in offsets.iter().enumerate() {
        let answer = if unstable.get(i) == Some(&true) {
            partition_error(*partition, ErrorCode::UNSTABLE_OFFSET_COMMIT)
        } else {
            found(*partition, Some(committed))
        };
        by_topic.entry(topic).or_default().push(answer);
    }
    let mut topics = Vec::with_capacity(by_topic.len());
    for (name, partitions) in by_topic {
        if use_ids {
            let Some(id) = image.get(name).map(|t| t.id) else {
                continue;
            };
            topics.push(OffsetFetchResponseTopics {
                name: String::new(),
                topic_id: id,
                partitions,
                ..Default::default()
            });
        } else {
            topics.push(OffsetFetchResponseTopics {
                name: name.to_owned(),
                partitions,
                ..Default::default()
            });
        }
    }
    topics
}

/// About what a topic's answer adds to the response: what a copy of it costs.
fn topic_bytes(topic: &OffsetFetchResponseTopics) -> usize {
    /// Index, offset, leader epoch, error code, lengths and tagged fields of a partition.
    const PARTITION_BYTES: usize = 20;
    topic.name.len()
        + 16
        + topic
            .partitions
            .iter()
            .map(|p| PARTITION_BYTES + p.metadata.as_ref().map_or(0, String::len))
            .sum::<usize>()
}

/// A topic answered with `error` on each of its partitions: a v10 topic id the catalog does
/// not know, or a topic the principal may not DESCRIBE.
fn topic_error(
    t: &OffsetFetchRequestTopics,
    error: ErrorCode,
    use_ids: bool,
) -> OffsetFetchResponseTopics {
    OffsetFetchResponseTopics {
        name: if use_ids {
            String::new()
        } else {
            t.name.clone()
        },
        topic_id: if use_ids { t.topic_id } else { Uuid::nil() },
        partitions: t
            .partition_indexes
            .iter()
            .map(|p| partition_error(*p, error))
            .collect(),
        ..Default::default()
    }
}

fn partition_error(partition: i32, error: ErrorCode) -> OffsetFetchResponsePartitions {
    OffsetFetchResponsePartitions {
        partition_index: partition,
        committed_offset: INVALID_OFFSET,
        committed_leader_epoch: NO_LEADER_EPOCH,
        metadata: Some(String::new()),
        error_code: error.code(),
        ..Default::default()
    }
}

/// One partition's answer: the committed offset, or -1 when there is none.
fn found(partition: i32, committed: Option<&CommittedOffset>) -> OffsetFetchResponsePartitions {
    match committed {
        Some(c) => OffsetFetchResponsePartitions {
            partition_index: partition,
            committed_offset: c.offset,
            committed_leader_epoch: c.leader_epoch,
            metadata: Some(c.metadata.clone()),
            error_code: ErrorCode::NONE.code(),
            ..Default::default()
        },
        None => OffsetFetchResponsePartitions {
            partition_index: partition,
            committed_offset: INVALID_OFFSET,
            committed_leader_epoch: NO_LEADER_EPOCH,
            metadata: Some(String::new()),
            error_code: ErrorCode::NONE.code(),
            ..Default::default()
        },
    }
}

/// Kafka's `OffsetFetchResponse.groupError`.
fn group_error(
    group: &OffsetFetchRequestGroup,
    error: ErrorCode,
    version: i16,
) -> OffsetFetchResponseGroup {
    if version >= TOP_LEVEL_ERROR_VERSION {
        return OffsetFetchResponseGroup {
            group_id: group.group_id.clone(),
            error_code: error.code(),
            ..Default::default()
        };
    }
    OffsetFetchResponseGroup {
        group_id: group.group_id.clone(),
        topics: group
            .topics
            .iter()
            .flatten()
            .map(|t| OffsetFetchResponseTopics {
                name: t.name.clone(),
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|p| OffsetFetchResponsePartitions {
                        partition_index: *p,
                        error_code: error.code(),
                        committed_offset: INVALID_OFFSET,
                        metadata: Some(String::new()),
                        committed_leader_epoch: NO_LEADER_EPOCH,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Kafka's `OffsetFetchResponse.Builder.build`: the groups as they are from v8, else the one
/// group in the v1-7 layout.
fn build(groups: Vec<OffsetFetchResponseGroup>, version: i16) -> OffsetFetchResponse {
    if version >= BATCH_VERSION {
        return OffsetFetchResponse {
            throttle_time_ms: 0,
            groups,
            ..Default::default()
        };
    }
    let Some(group) = groups.into_iter().next() else {
        return OffsetFetchResponse::default();
    };
    OffsetFetchResponse {
        throttle_time_ms: 0,
        error_code: if version >= TOP_LEVEL_ERROR_VERSION {
            group.error_code
        } else {
            ErrorCode::NONE.code()
        },
        topics: group
            .topics
            .into_iter()
            .map(|t| OffsetFetchResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        metadata: p.metadata,
                        error_code: p.error_code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The authorization matrix's rows of OffsetFetch ([`crate::rpc::authorize`]'s matrix tests): each
/// request with the ACLs that allow it and what an allowed and a refused principal get.
#[cfg(test)]
pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {
    use crate::rpc::authorize::matrix_tests::prelude::*;
    vec![
        row!(OffsetFetch ("group") 8 on Broker, offset_fetch(true),
            needs [(Describe, Group, GROUP), (Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| match r.groups[0].error_code {
                0 => code(r.groups[0].topics[0].partitions[0].error_code),
                c => code(c),
            },
            allowed "NONE", denied "GROUP_AUTHORIZATION_FAILED"),
        row!(OffsetFetch ("topic") 8 on Broker, offset_fetch(true),
            also [(Describe, Group, GROUP)],
            needs [(Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| match r.groups[0].error_code {
                0 => code(r.groups[0].topics[0].partitions[0].error_code),
                c => code(c),
            },
            allowed "NONE", denied "TOPIC_AUTHORIZATION_FAILED"),
        row!(OffsetFetch ("all offsets") 8 on Broker, offset_fetch(false),
            also [(Describe, Group, GROUP)],
            needs [(Describe, Topic, TOPIC)],
            OffsetFetchResponse => |r| listed(r.groups[0].error_code, r.groups[0].topics.iter().map(|t| t.name.as_str()), TOPIC),
            allowed "t listed", denied "t left out"),
    ]
}
mod access;
mod shard_reads;

#[cfg(test)]
mod tests;
