//! A segment: a run of batches stored exactly as appended (offsets assigned), in memory or in
//! one file named after its base offset (`00000000000000000042.log`, as Kafka names them),
//! with the dense index of its batches ([`BatchEntry`]) kept in memory and, once sealed, in
//! `00000000000000000042.index` beside it.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::entry::{self, BatchEntry};
use crate::scan;
use crate::seal::{self, PendingSeal};
use crate::writeback::WritebackRange;

/// Where a segment's bytes live.
#[derive(Debug)]
pub(crate) enum Store {
    /// One `Bytes` per batch, in offset order.
    Memory(Vec<Bytes>),
    File(FileStore),
}

#[derive(Debug)]
pub(crate) struct FileStore {
    pub path: PathBuf,
    /// Shared with reads in progress, which keep it open even after the segment is deleted.
    pub file: Arc<File>,
    /// The segment takes no more appends; its index file is written, or will be by its
    /// pending seal.
    pub sealed: bool,
    /// Sealed by a roll and not yet synced and indexed ([`crate::seal`]).
    pub pending_seal: Option<Arc<PendingSeal>>,
    /// Bytes before this position were handed out for writeback ([`crate::writeback`]).
    pub written_back: u64,
}

impl FileStore {
    fn new(path: PathBuf, file: File, sealed: bool, written_back: u64) -> FileStore {
        FileStore {
            path,
            file: Arc::new(file),
            sealed,
            pending_seal: None,
            written_back,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Segment {
    pub base_offset: i64,
    pub entries: Vec<BatchEntry>,
    /// Bytes stored (the next batch's position).
    pub size: u64,
    /// When the segment was created, for `segment.ms` while it holds no batch.
    pub created_ms: i64,
    pub store: Store,
}

/// A piece of a read: bytes already in memory, or a range of a segment file to be read after
/// the log's lock is released.
#[derive(Debug, Clone)]
pub enum Chunk {
    Memory(Bytes),
    File {
        file: Arc<File>,
        position: u64,
        len: usize,
    },
}

impl Chunk {
    pub fn len(&self) -> usize {
        match self {
            Chunk::Memory(b) => b.len(),
            Chunk::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, reading them from the file if need be.
    pub fn load(&self) -> io::Result<Bytes> {
        match self {
            Chunk::Memory(b) => Ok(b.clone()),
            Chunk::File {
                file,
                position,
                len,
            } => {
                let mut buf = BytesMut::zeroed(*len);
                file.read_exact_at(&mut buf, *position)?;
                Ok(buf.freeze())
            }
        }
    }
}

/// Kafka's file names: the base offset in 20 digits.
pub(crate) fn file_name(base_offset: i64, extension: &str) -> String {
    format!("{base_offset:020}.{extension}")
}

impl Segment {
    pub fn in_memory(base_offset: i64, now_ms: i64) -> Segment {
        Segment {
            base_offset,
            entries: Vec::new(),
            size: 0,
            created_ms: now_ms,
            store: Store::Memory(Vec::new()),
        }
    }

    /// A new, empty segment file in `dir`.
    pub fn create_file(dir: &Path, base_offset: i64, now_ms: i64) -> io::Result<Segment> {
        let path = dir.join(file_name(base_offset, "log"));
        // Anything left with this name is not a segment of the log as it stands.
        remove_if_exists(&path)?;
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)?;
        // A leftover index of an earlier segment with this base offset must not be trusted.
        remove_if_exists(&path.with_extension("index"))?;
        Ok(Segment {
            base_offset,
            entries: Vec::new(),
            size: 0,
            created_ms: now_ms,
            store: Store::File(FileStore::new(path, file, false, 0)),
        })
    }

    /// A new, empty segment file at `path` (compaction writes `.cleaned` files).
    pub fn create_file_at(path: &Path, base_offset: i64, created_ms: i64) -> io::Result<Segment> {
        remove_if_exists(path)?;
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        Ok(Segment {
            base_offset,
            entries: Vec::new(),
            size: 0,
            created_ms,
            store: Store::File(FileStore::new(path.to_path_buf(), file, false, 0)),
        })
    }

    /// Puts this (compacted) segment in the place of the segment file `target`: synced, the old
    /// index removed, renamed over it, then sealed with its own index. A crash in between
    /// leaves either file whole, and without an index it is scanned at the next start.
    pub fn install_as(&mut self, target: &Path) -> io::Result<()> {
        let Store::File(f) = &mut self.store else {
            return Ok(());
        };
        f.file.sync_all()?;
        remove_if_exists(&target.with_extension("index"))?;
        std::fs::rename(&f.path, target)?;
        f.path = target.to_path_buf();
        f.sealed = false;
        self.seal()
    }

    /// Opens a segment file. Its index is trusted when it is intact and ends where the file
    /// ends; otherwise the file is scanned, and a torn or corrupt tail is cut off (returned
    /// as the number of bytes dropped).
    pub fn open_file(path: &Path, base_offset: i64, now_ms: i64) -> io::Result<(Segment, u64)> {
        let mut file = OpenOptions::new().read(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        let index = entry::read_index_file(&path.with_extension("index"))?;
        let trusted = index.filter(|entries| {
            let end = entries.last().map_or(0, BatchEntry::end_position);
            end == len && entries.first().is_none_or(|e| e.base_offset >= base_offset)
        });
        let (entries, sealed, dropped) = match trusted {
            Some(entries) => (entries, true, 0),
            None => {
                file.seek(SeekFrom::Start(0))?;
                let scanned =
                    scan::scan(&mut io::BufReader::with_capacity(1 << 20, &mut file), len)?;
                let dropped = len - scanned.valid_len;
                if dropped > 0 {
                    file.set_len(scanned.valid_len)?;
                    file.sync_all()?;
                }
                (scanned.entries, false, dropped)
            }
        };
        let size = entries.last().map_or(0, BatchEntry::end_position);
        let created_ms = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(now_ms, |d| i64::try_from(d.as_millis()).unwrap_or(now_ms));
        Ok((
            Segment {
                base_offset,
                entries,
                size,
                created_ms,
                // What the file held before this start is the kernel's to write back.
                store: Store::File(FileStore::new(path.to_path_buf(), file, sealed, size)),
            },
            dropped,
        ))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The offset after the last batch, or the base offset of an empty segment.
    pub fn next_offset(&self) -> i64 {
        self.entries
            .last()
            .map_or(self.base_offset, BatchEntry::next_offset)
    }

    pub fn max_timestamp(&self) -> i64 {
        self.entries
            .iter()
            .map(|e| e.max_timestamp)
            .max()
            .unwrap_or(-1)
    }

    /// Appends one batch given as its (patched) header and the rest of its bytes. On an error
    /// the segment is as before, or the error says it could not be restored.
    pub fn append(
        &mut self,
        header: &[u8],
        body: &[u8],
        mut entry: BatchEntry,
    ) -> Result<(), AppendIoError> {
        let len = header.len() + body.len();
        entry.position = u32::try_from(self.size)
            .map_err(|_| AppendIoError::Undone(io::Error::other("segment exceeds 4 GiB")))?;
        entry.size = u32::try_from(len)
            .map_err(|_| AppendIoError::Undone(io::Error::other("batch exceeds 4 GiB")))?;
        match &mut self.store {
            Store::Memory(batches) => {
                let mut b = BytesMut::with_capacity(len);
                b.extend_from_slice(header);
                b.extend_from_slice(body);
                batches.push(b.freeze());
            }
            Store::File(f) => {
                if let Err(e) =
                    write_all_vectored(&f.file, &mut [IoSlice::new(header), IoSlice::new(body)])
                {
                    // Cut whatever part reached the file, so the segment stays whole.
                    return match f.file.set_len(self.size) {
                        Ok(()) => Err(AppendIoError::Undone(e)),
                        Err(cut) => Err(AppendIoError::Damaged { write: e, cut }),
                    };
                }
            }
        }
        self.entries.push(entry);
        self.size += len as u64;
        Ok(())
    }

    /// The bytes of entries `from..to` as chunks (one per batch in memory, one range on disk).
    pub fn chunks(&self, from: usize, to: usize, out: &mut Vec<Chunk>) {
        if from >= to {
            return;
        }
        match &self.store {
            Store::Memory(batches) => {
                out.extend(batches[from..to].iter().cloned().map(Chunk::Memory));
            }
            Store::File(f) => {
                let start = self.entries[from].position;
                let end = self.entries[to - 1].end_position();
                out.push(Chunk::File {
                    file: Arc::clone(&f.file),
                    position: u64::from(start),
                    len: (end - u64::from(start)) as usize,
                });
            }
        }
    }

    /// One batch's bytes.
    pub fn batch_bytes(&self, index: usize) -> io::Result<Bytes> {
        let mut chunks = Vec::with_capacity(1);
        self.chunks(index, index + 1, &mut chunks);
        chunks
            .first()
            .map_or_else(|| Err(io::Error::other("no such batch")), Chunk::load)
    }

    /// The appended bytes not yet handed out for writeback, once there are at least `chunk` of
    /// them; none for a segment in memory or sealed (its seal syncs the rest).
    pub fn take_writeback(&mut self, chunk: u64) -> Option<WritebackRange> {
        let Store::File(f) = &mut self.store else {
            return None;
        };
        let len = self.size.checked_sub(f.written_back)?;
        if f.sealed || len < chunk {
            return None;
        }
        let range = WritebackRange {
            file: Arc::clone(&f.file),
            offset: f.written_back,
            len,
        };
        f.written_back = self.size;
        Some(range)
    }

    /// Makes appended bytes durable.
    pub fn flush(&self) -> io::Result<()> {
        match &self.store {
            Store::Memory(_) => Ok(()),
            Store::File(f) => f.file.sync_data(),
        }
    }

    /// Takes no more appends: fsyncs the file and writes its index beside it.
    pub fn seal(&mut self) -> io::Result<()> {
        if let Store::File(f) = &mut self.store {
            if !f.sealed {
                f.file.sync_all()?;
                entry::write_index_file(&f.path.with_extension("index"), &self.entries)?;
                f.sealed = true;
            }
        }
        self.settle_seal()
    }

    /// Takes no more appends and hands back the fsync and index write still to do, to run off
    /// the write path ([`crate::seal`]); none for a segment in memory or already sealed.
    pub fn begin_seal(&mut self) -> Option<Arc<PendingSeal>> {
        let Store::File(f) = &mut self.store else {
            return None;
        };
        if f.sealed {
            return None;
        }
        f.sealed = true;
        let pending = PendingSeal::new(
            Arc::clone(&f.file),
            f.path.with_extension("index"),
            self.entries.clone(),
        );
        f.pending_seal = Some(Arc::clone(&pending));
        Some(pending)
    }

    /// Runs the seal a roll left pending, if any (waiting for it when it is running elsewhere).
    pub fn settle_seal(&self) -> io::Result<()> {
        match &self.store {
            Store::File(FileStore {
                pending_seal: Some(pending),
                ..
            }) => seal::settle(pending),
            _ => Ok(()),
        }
    }

    /// Removes the segment's files (open reads keep theirs until they finish).
    pub fn delete_files(&self) -> io::Result<()> {
        // A seal still to run would write the index of a deleted segment; whether it succeeds
        // does not matter for a segment on its way out.
        let _ = self.settle_seal();
        if let Store::File(f) = &self.store {
            remove_if_exists(&f.path.with_extension("index"))?;
            remove_if_exists(&f.path)?;
        }
        Ok(())
    }

    pub fn path(&self) -> Option<&Path> {
        match &self.store {
            Store::File(f) => Some(&f.path),
            Store::Memory(_) => None,
        }
    }
}

/// An append that failed.
#[derive(Debug)]
pub(crate) enum AppendIoError {
    /// Nothing of the batch stayed in the segment.
    Undone(io::Error),
    /// Part of the batch may be in the file and cutting it failed too.
    Damaged { write: io::Error, cut: io::Error },
}

fn write_all_vectored(mut file: &File, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write the whole batch",
                ))
            }
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(crate) fn remove_if_exists(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Reads a whole file (small files only: checkpoints).
pub(crate) fn read_small_file(path: &Path) -> io::Result<Option<String>> {
    match File::open(path) {
        Ok(mut f) => {
            let mut s = String::new();
            f.read_to_string(&mut s)?;
            Ok(Some(s))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces a small file atomically (write, fsync, rename).
pub(crate) fn write_small_file(path: &Path, contents: &str) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}
