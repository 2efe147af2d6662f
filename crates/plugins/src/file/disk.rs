//! The plugin's directory: crash-safe writes (a temporary file, fsync, rename, fsync of the
//! directory), reads, removals and the scan at start-up. Every failure is an error value with
//! the path in it, never a panic: a full disk is an answer to the push, not a crash.
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use kcoord_plugin_api::{StreamsGroupTopologyDescription, Uuid};

use super::format::{file_name, Description, StoredFile, FORMAT, SUFFIX, TEMP_SUFFIX};

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a stored topology description: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DiskError + '_ {
    move |source| DiskError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A description found on disk (its content is read again when asked for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub group_id: String,
    pub id: Uuid,
    pub stored_ms: u64,
    /// The file's size: what `max.total.bytes` counts.
    pub bytes: usize,
}

/// The file's bytes for a description.
pub fn encode(
    group_id: &str,
    id: Uuid,
    stored_ms: u64,
    description: &StreamsGroupTopologyDescription,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&StoredFile {
        format: FORMAT,
        group_id: group_id.to_owned(),
        id,
        stored_ms,
        description: Description::from(description),
    })
}

/// Writes `bytes` as the file of `(group_id, id)` so that after a crash either the whole file
/// or none of it is there.
pub fn write(dir: &Path, group_id: &str, id: Uuid, bytes: &[u8]) -> Result<(), DiskError> {
    let name = file_name(group_id, id);
    let path = dir.join(&name);
    let temp = dir.join(format!("{}{TEMP_SUFFIX}", name.trim_end_matches(SUFFIX)));
    let written = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        // Best effort: a leftover temporary file is removed at the next start anyway.
        let _ = fs::remove_file(&temp);
        return Err(io(&temp)(e));
    }
    fs::rename(&temp, &path).map_err(io(&path))?;
    // The rename itself is durable only once the directory is.
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))
}

/// The stored file of `(group_id, id)`, read and checked.
pub fn read(dir: &Path, group_id: &str, id: Uuid) -> Result<StoredFile, DiskError> {
    let path = dir.join(file_name(group_id, id));
    let stored = parse(&path, &fs::read(&path).map_err(io(&path))?)?;
    if stored.group_id != group_id || stored.id != id {
        return Err(corrupt(
            &path,
            "its group or id is not the one its name says",
        ));
    }
    Ok(stored)
}

pub fn remove(dir: &Path, group_id: &str, id: Uuid) -> Result<(), DiskError> {
    let path = dir.join(file_name(group_id, id));
    match fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&path)(e)),
        _ => Ok(()),
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> DiskError {
    DiskError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<StoredFile, DiskError> {
    let stored: StoredFile =
        serde_json::from_slice(bytes).map_err(|e| corrupt(path, e.to_string()))?;
    if stored.format != FORMAT {
        return Err(corrupt(path, format!("format {}", stored.format)));
    }
    if file_name(&stored.group_id, stored.id)
        != path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    {
        return Err(corrupt(
            path,
            "its group or id is not the one its name says",
        ));
    }
    Ok(stored)
}

/// Every description in `dir` (created if missing), and the files that are not one (torn,
/// corrupt, of another format) with why. Temporary files of interrupted writes are removed.
pub fn scan(dir: &Path) -> Result<(Vec<Found>, Vec<DiskError>), DiskError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(TEMP_SUFFIX) {
            let _ = fs::remove_file(&path);
            continue;
        }
        if !name.ends_with(SUFFIX) {
            continue;
        }
        let read = fs::read(&path).map_err(io(&path));
        match read.and_then(|bytes| Ok((parse(&path, &bytes)?, bytes.len()))) {
            Ok((stored, bytes)) => found.push(Found {
                group_id: stored.group_id,
                id: stored.id,
                stored_ms: stored.stored_ms,
                bytes,
            }),
            Err(e) => skipped.push(e),
        }
    }
    Ok((found, skipped))
}
