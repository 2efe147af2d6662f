//! The actions, Kafka's `StreamsGroupService`: what to ask the admin client and what to print.
//! Output goes to `out` exactly as Kafka prints it (its `printError` notices included); the
//! caller turns an `Err` into one line on stderr.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use crate::admin::{OffsetSpec, StreamsAdmin};
use crate::error::{AdminError, CliError};
use crate::format::OutputFormat;
use crate::model::GroupState;
use crate::options::{Action, Describe, Groups};
use crate::tables;
use crate::topology::TopologyDescriptionStatus;

/// Runs `action` and returns the exit code: 0, or 1 when `--describe --topology` found no
/// description for some group (the remaining groups are still described, as in Kafka).
pub async fn execute<A: StreamsAdmin + ?Sized>(
    action: &Action,
    admin: &A,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, CliError> {
    match action {
        Action::List { states } => list(admin, states.as_deref(), out).await,
        Action::Describe {
            groups,
            what,
            verbose,
        } => describe(admin, groups, *what, *verbose, out, err).await,
        Action::Delete { groups } => delete(admin, groups, out).await,
    }
}

async fn group_ids<A: StreamsAdmin + ?Sized>(
    admin: &A,
    groups: &Groups,
) -> Result<Vec<String>, CliError> {
    Ok(match groups {
        Groups::Named(ids) => ids.clone(),
        Groups::All => admin
            .list_streams_groups(&[])
            .await?
            .into_iter()
            .map(|g| g.group_id)
            .collect(),
    })
}

async fn list<A: StreamsAdmin + ?Sized>(
    admin: &A,
    states: Option<&[GroupState]>,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let text = match states {
        None => tables::format_group_ids(&admin.list_streams_groups(&[]).await?),
        Some(states) => tables::format_group_states(&admin.list_streams_groups(states).await?),
    };
    out.write_all(text.as_bytes())?;
    Ok(0)
}

async fn describe<A: StreamsAdmin + ?Sized>(
    admin: &A,
    groups: &Groups,
    what: Describe,
    verbose: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, CliError> {
    let mut exit_code = 0;
    let ids = group_ids(admin, groups).await?;
    if let Describe::Topology(format) = what {
        if format.single_group() && ids.len() > 1 {
            return Err(CliError::Usage(one_drawing_only(ids.len())));
        }
    }
    for group_id in ids {
        let topology = matches!(what, Describe::Topology(_));
        // A group-level error aborts the command here, as the exception does in Kafka.
        let description = admin.describe_streams_group(&group_id, topology).await?;
        let text = match what {
            Describe::Topology(format) => match topology_output(&description, format) {
                Ok(text) => text,
                Err(message) => {
                    exit_code = 1;
                    // Text output follows Kafka (its `printError`, on stdout); the machine
                    // formats keep stdout parseable and report on stderr.
                    if format == OutputFormat::Text {
                        tables::error_line(&message)
                    } else {
                        writeln!(err, "Error: {message}")?;
                        String::new()
                    }
                }
            },
            Describe::Members => tables::format_members(&description, verbose),
            Describe::State => tables::format_state(&description, verbose),
            Describe::Offsets => {
                let offsets = offsets(admin, &description).await?;
                tables::format_offsets(&description, &offsets, verbose)
            }
            Describe::Lag => {
                let offsets = offsets(admin, &description).await?;
                tables::format_subtopology_lag(&description, &offsets)
            }
        };
        out.write_all(text.as_bytes())?;
    }
    Ok(exit_code)
}

/// Kafka's `getOffsets` of the group's active tasks' partitions (what `--offsets` lists and
/// `--lag` sums).
async fn offsets<A: StreamsAdmin + ?Sized>(
    admin: &A,
    description: &crate::model::StreamsGroupDescription,
) -> Result<BTreeMap<crate::model::TopicPartition, tables::OffsetsInfo>, CliError> {
    let partitions =
        tables::partitions_of_active_tasks(description).map_err(AdminError::InvalidResponse)?;
    // No rows means nothing to look up (and nothing printed); this also spares a coordinator
    // without OffsetFetch for members-less groups.
    if partitions.is_empty() {
        return Ok(BTreeMap::new());
    }
    let earliest = admin
        .list_offsets(&partitions, OffsetSpec::Earliest)
        .await?;
    let latest = admin.list_offsets(&partitions, OffsetSpec::Latest).await?;
    let committed = admin
        .list_streams_group_offsets(&description.group_id)
        .await?;
    Ok(tables::offsets_info(
        &partitions,
        &committed,
        &earliest,
        &latest,
    ))
}

/// Why `--output svg` (a file holds one drawing) refuses to describe `groups` groups at once.
pub fn one_drawing_only(groups: usize) -> String {
    format!(
        "Option [output] svg draws the topology of one group, but {groups} groups were given: \
         describe them one --group at a time (an SVG document holds one drawing)."
    )
}

/// The rendered topology, or the message for why there is none (the specification's wording
/// for NOT_STORED and ERROR; Kafka's for the status that cannot occur here).
fn topology_output(
    description: &crate::model::StreamsGroupDescription,
    format: OutputFormat,
) -> Result<String, String> {
    let group_id = &description.group_id;
    match (description.topology_description_status, &description.topology_description) {
        (TopologyDescriptionStatus::Available, Some(topology)) => format
            .render(group_id, topology)
            .map_err(|e| format!("Cannot draw the topology of group '{group_id}': {e}")),
        (TopologyDescriptionStatus::NotStored, _) => {
            Err(format!("No topology description has been recorded for group '{group_id}'."))
        }
        (TopologyDescriptionStatus::Error, _) => Err(format!(
            "The broker failed to retrieve the topology description for group '{group_id}' (check broker logs)."
        )),
        (status, _) => Err(format!("No topology description is available for streams group '{group_id}' (status: {status}).")),
    }
}

async fn delete<A: StreamsAdmin + ?Sized>(
    admin: &A,
    groups: &Groups,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    let mut requested = group_ids(admin, groups).await?;
    let mut seen = BTreeSet::new();
    requested.retain(|g| seen.insert(g.clone()));

    // Kafka's `preAdminCallChecks`: only existing, empty streams groups are sent for deletion.
    let listings: HashMap<String, Option<GroupState>> = admin
        .list_streams_groups(&[])
        .await?
        .into_iter()
        .map(|g| (g.group_id, g.state))
        .collect();
    let mut failures: HashMap<String, String> = HashMap::new();
    for group_id in &requested {
        let failure = match listings.get(group_id) {
            None => Some(format!("java.lang.IllegalArgumentException: Group '{group_id}' does not exist or is not a streams group.")),
            Some(Some(GroupState::Dead)) => Some(format!("java.lang.IllegalStateException: Streams group '{group_id}' group state is DEAD.")),
            Some(Some(GroupState::Empty)) | Some(None) => None,
            Some(Some(_)) => Some(format!("org.apache.kafka.common.errors.GroupNotEmptyException: Streams group '{group_id}' is not EMPTY.")),
        };
        if let Some(failure) = failure {
            failures.insert(group_id.clone(), failure);
        }
    }
    let to_delete: Vec<String> = requested
        .iter()
        .filter(|g| !failures.contains_key(*g))
        .cloned()
        .collect();
    let mut deleted = Vec::new();
    if !to_delete.is_empty() {
        for (group_id, result) in admin.delete_streams_groups(&to_delete).await? {
            match result {
                Ok(()) => deleted.push(group_id),
                Err(e) => {
                    failures.insert(group_id, e.to_string());
                }
            }
        }
    }
    let failed: Vec<(String, String)> = requested
        .iter()
        .filter_map(|g| failures.get(g).map(|f| (g.clone(), f.clone())))
        .collect();
    out.write_all(tables::format_delete_outcome(&deleted, &failed).as_bytes())?;
    // Kafka's tool exits 0 even when some deletions failed; the messages say which.
    Ok(0)
}
