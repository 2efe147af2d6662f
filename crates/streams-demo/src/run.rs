//! The simulation: connect, create the source topics, start the members, print their events
//! until Ctrl-C or `--run-for`, then leave.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use kcoord_client::admin::NewTopic;
use kcoord_client::streams::{
    MemberSnapshot, MemberState, StreamsMember, StreamsMemberConfig, StreamsMemberHandle,
};
use kcoord_client::topology::streams::TopologyDescription;
use kcoord_client::{Client, ClientConfig, ClientError};
use kcoord_wire::messages::streams_group_heartbeat_request::Topology;
use kcoord_wire::ErrorCode;
use tokio::sync::mpsc;

use crate::app_topology::{self, TopologyFileError};
use crate::events;
use crate::options::Options;

/// Replication factor of created topics: the server's default (CreateTopics v4+).
const DEFAULT_REPLICATION_FACTOR: i16 = -1;

/// Why the simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The topology file: a usage error (exit 2).
    #[error(transparent)]
    Topology(#[from] TopologyFileError),
    #[error("{0}")]
    Client(#[from] ClientError),
    #[error("every member stopped: {0}")]
    AllMembersFailed(String),
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs the simulation described by `options`, printing event lines to `out`. `stop` ends it
/// (the binary passes Ctrl-C; `--run-for` ends it too).
pub async fn run(
    options: &Options,
    out: &mut (dyn Write + Send),
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), SimError> {
    let description = app_topology::load(&options.topology)?;
    let topology =
        app_topology::assignment_topology(&description, &options.group, options.topology_epoch)
            .map_err(|source| TopologyFileError::Assignment {
                path: options.topology.display().to_string(),
                source,
            })?;
    let client = Client::connect(
        &options.bootstrap_server,
        ClientConfig::new("kcoord-streams-demo"),
    )
    .await?;
    writeln!(out, "connected to {}", options.bootstrap_server)?;
    create_source_topics(
        &client,
        &app_topology::source_topics(&description),
        options.partitions,
        out,
    )
    .await?;

    let base = member_config(options, &description, topology)?;
    let push = if options.no_push { "off" } else { "on" };
    writeln!(
        out,
        "starting {} member(s) of group {} (topology description push {push})",
        options.members, options.group
    )?;

    let (lines, mut printed) = mpsc::unbounded_channel::<String>();
    let mut members = Vec::new();
    for i in 1..=options.members {
        let config = base
            .clone()
            .with_member_id(uuid::Uuid::new_v4().to_string())
            .with_process_id(uuid::Uuid::new_v4().to_string());
        let name = format!("member-{i}");
        writeln!(out, "{name}: member id {}", config.member_id)?;
        let handle = StreamsMember::start(&client, config);
        tokio::spawn(watch(name.clone(), handle.subscribe(), lines.clone()));
        members.push((name, handle));
    }
    drop(lines);

    print_until_stopped(&mut printed, stop, options.run_for, out).await?;
    let failed = all_failed(&members);
    leave(members, out).await?;
    // The watchers print what is left, then stop.
    while let Ok(Some(line)) =
        tokio::time::timeout(Duration::from_millis(200), printed.recv()).await
    {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    match failed {
        Some(error) => Err(SimError::AllMembersFailed(error)),
        None => Ok(()),
    }
}

/// What every member starts from, converted to the wire form once, here, and shared by all.
fn member_config(
    options: &Options,
    description: &TopologyDescription,
    topology: Topology,
) -> Result<StreamsMemberConfig, SimError> {
    let base = StreamsMemberConfig::new(options.group.clone(), topology)
        .with_topology_description(description)
        .map_err(|source| TopologyFileError::Invalid {
            path: options.topology.display().to_string(),
            source,
        })?
        .with_topology_description_push(!options.no_push);
    Ok(match options.heartbeat_version {
        Some(version) => base.with_heartbeat_version(version),
        None => base,
    })
}

/// Prints the members' event lines until `stop`, `run_for`, or every member stopped on its own.
async fn print_until_stopped(
    printed: &mut mpsc::UnboundedReceiver<String>,
    stop: impl std::future::Future<Output = ()>,
    run_for: Option<Duration>,
    out: &mut (dyn Write + Send),
) -> Result<(), SimError> {
    let deadline = run_for.map(|d| tokio::time::Instant::now() + d);
    let until_deadline = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop, until_deadline);
    loop {
        tokio::select! {
            line = printed.recv() => match line {
                Some(line) => writeln!(out, "{line}")?,
                // Every watcher ended: every member stopped on its own.
                None => return Ok(()),
            },
            () = &mut stop => return Ok(()),
            () = &mut until_deadline => return Ok(()),
        }
    }
}

/// The first member's last error when every member failed.
fn all_failed(members: &[(String, StreamsMemberHandle)]) -> Option<String> {
    members
        .iter()
        .all(|(_, h)| h.state() == MemberState::Failed)
        .then(|| {
            members
                .first()
                .and_then(|(_, h)| h.snapshot().last_error)
                .unwrap_or_else(|| "no error reported".to_string())
        })
}

/// The members still running leave the group.
async fn leave(
    members: Vec<(String, StreamsMemberHandle)>,
    out: &mut (dyn Write + Send),
) -> Result<(), SimError> {
    let mut leaves = Vec::new();
    for (name, handle) in members {
        if !handle.is_finished() {
            leaves.push((name, tokio::spawn(handle.leave())));
        }
    }
    for (name, leave) in leaves {
        match leave.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => writeln!(out, "{name}: leave failed: {e}")?,
            Err(e) => writeln!(out, "{name}: leave failed: {e}")?,
        }
    }
    Ok(())
}

/// Creates the topics the sources read (TOPIC_ALREADY_EXISTS is fine). A failure is printed
/// and the run goes on: the members then report MISSING_SOURCE_TOPICS.
async fn create_source_topics(
    client: &Client,
    topics: &std::collections::BTreeSet<String>,
    partitions: i32,
    out: &mut (dyn Write + Send),
) -> Result<(), SimError> {
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|t| NewTopic::new(t.clone(), partitions, DEFAULT_REPLICATION_FACTOR))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    match client.create_topics(&new, false).await {
        Ok(results) => {
            for result in results {
                match result.result {
                    Ok(_) => writeln!(
                        out,
                        "created topic {} ({partitions} partitions)",
                        result.name
                    )?,
                    Err(e) if e.error_code() == Some(ErrorCode::TOPIC_ALREADY_EXISTS) => {
                        writeln!(out, "topic {} exists", result.name)?
                    }
                    Err(e) => writeln!(out, "could not create topic {}: {e}", result.name)?,
                }
            }
        }
        Err(e) => writeln!(out, "could not create the source topics: {e}")?,
    }
    Ok(())
}

/// Turns one member's snapshots into event lines, until the member stops.
async fn watch(
    name: String,
    mut snapshots: tokio::sync::watch::Receiver<MemberSnapshot>,
    lines: mpsc::UnboundedSender<String>,
) {
    let mut before = snapshots.borrow().clone();
    let name = Arc::<str>::from(name);
    loop {
        let stopped = snapshots.changed().await.is_err();
        let after = snapshots.borrow_and_update().clone();
        for line in events::changes(&name, &before, &after) {
            if lines.send(line).is_err() {
                return;
            }
        }
        before = after;
        if stopped {
            return;
        }
    }
}
