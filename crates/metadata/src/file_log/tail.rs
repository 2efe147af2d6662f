//! A suspect tail: whether the bytes after the last valid entry are a torn write to cut or
//! corruption (module docs of `file_log.rs`, "Loading: torn tails versus corruption"). Where
//! the cut starts (the end of the last whole batch) is `read.rs`'s call.

use super::read::{read_entry, EntryRead, Expect};
use super::{be_8, be_u32, is_zero};
use super::{CutReason, Format, ENTRY_HEADER, MAX_ENTRY_BYTES, MIN_BODY, MIN_ENTRY, MORE, SECTOR};

/// Decides about the bytes from `position` (where `read` says no valid entry starts) to the
/// end: why they may be cut, or why they are corruption.
pub(super) fn tail_cut(
    bytes: &[u8],
    position: usize,
    format: Format,
    previous: Option<u64>,
    read: EntryRead,
) -> Result<CutReason, String> {
    let rest = &bytes[position..];
    let explain = |read: &EntryRead| match read {
        EntryRead::Damaged { reason, .. } => reason.clone(),
        _ => "the file ends inside it".to_string(),
    };
    if let Some(at) = valid_entry_after(bytes, position, format, previous) {
        return Err(format!(
            "{}, and a valid entry follows at byte {at}",
            explain(&read)
        ));
    }
    if is_zero(rest) {
        return Ok(CutReason::ZeroFilled);
    }
    match read {
        EntryRead::Incomplete if whole_with_actual_length(rest, format) => Err(format!(
            "its length field is damaged: it runs past the end of the file, but the checksum matches the {} bytes that are there",
            rest.len()
        )),
        EntryRead::Incomplete => Ok(CutReason::TornEntry),
        EntryRead::Damaged {
            checksum: true,
            ..
        } if zero_from_a_sector_inside(bytes, position, format) => Ok(CutReason::LostSectors),
        read => Err(explain(&read)),
    }
}

/// Whether the entry at the start of `rest`, with its length field replaced by the length it
/// actually has (to the end of the file; its "more" bit kept), matches its checksum.
fn whole_with_actual_length(rest: &[u8], format: Format) -> bool {
    if rest.len() < MIN_ENTRY {
        return false;
    }
    let Ok(actual) = u32::try_from(rest.len() - 4) else {
        return false;
    };
    let field = match format.split_length(be_u32(rest)) {
        (_, true) => actual | MORE,
        (_, false) => actual,
    };
    format.checksum(&field.to_be_bytes(), &rest[ENTRY_HEADER..]) == be_u32(&rest[4..8])
}

/// Whether the file is zero from a 512-byte boundary inside the entry at `position` (inside
/// what its length says it spans, or to the end of the file) to its end.
fn zero_from_a_sector_inside(bytes: &[u8], position: usize, format: Format) -> bool {
    let claimed_end = bytes
        .get(position..position + 4)
        .map(|field| format.split_length(be_u32(field)).0)
        .map(|length| position + 4 + length)
        .filter(|end| *end <= bytes.len() && *end > position + 4)
        .unwrap_or(bytes.len());
    let zeros = bytes.iter().rev().take_while(|b| **b == 0).count();
    let first_zero = (bytes.len() - zeros).max(position + 1);
    let boundary = first_zero.div_ceil(SECTOR) * SECTOR;
    boundary < claimed_end
}

/// The position of the first valid entry after `position` (one whose checksum matches and
/// whose offset is above `previous`), if any. Only run on a suspect tail at startup; the cheap
/// length and offset tests keep the checksums it computes few.
fn valid_entry_after(
    bytes: &[u8],
    position: usize,
    format: Format,
    previous: Option<u64>,
) -> Option<usize> {
    let last_start = bytes.len().checked_sub(MIN_ENTRY)?;
    (position + 1..=last_start).find(|&at| {
        let rest = &bytes[at..];
        let (length, _) = format.split_length(be_u32(&rest[..4]));
        let offset = i64::from_be_bytes(be_8(&rest[ENTRY_HEADER..ENTRY_HEADER + 8]));
        let plausible = (4 + MIN_BODY..=MAX_ENTRY_BYTES - 4).contains(&length)
            && length + 4 <= rest.len()
            && offset >= 0
            && previous.is_none_or(|p| offset as u64 > p);
        plausible
            && matches!(
                read_entry(rest, format, Expect::After(previous)),
                EntryRead::Valid { .. }
            )
    })
}
