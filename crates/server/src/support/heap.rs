//! Live heap bytes, counted by a wrapper around the daemon's allocator: the figure the memory
//! benchmarks compare with Apache Kafka's live heap after a full GC (resident memory also holds
//! the allocator's free pages and says little per member), and `kcoord_heap_live_bytes` on
//! `/metrics`.
//!
//! The count is striped like the request counters (`metrics/striped.rs`): each thread adds to a
//! slot of its own, so an allocation costs an uncontended add, never a cache line passed between
//! cores. A block freed on another thread than the one that allocated it makes the two slots
//! drift in opposite directions; only their sum means anything.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

/// Slots of the count; more threads than this share slots.
const SLOTS: usize = 16;

/// One slot per cache line.
#[repr(align(128))]
struct Slot(AtomicI64);

static SLOTS_BYTES: [Slot; SLOTS] = [const { Slot(AtomicI64::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// Set by [`CountingAllocator::start`]: a process whose global allocator is another (the
/// tests') has no count to report.
static COUNTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    // A `usize` needs no destructor, so the slot stays readable while a thread exits (and its
    // thread-locals allocate or free).
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

/// `A` with every allocation's size counted.
pub struct CountingAllocator<A>(A);

impl<A> CountingAllocator<A> {
    pub const fn new(inner: A) -> CountingAllocator<A> {
        CountingAllocator(inner)
    }
}

#[inline]
fn count(delta: i64) {
    let slot = SLOT.try_with(|s| *s).unwrap_or(0);
    SLOTS_BYTES[slot % SLOTS]
        .0
        .fetch_add(delta, Ordering::Relaxed);
}

/// The size of a layout as a count; no layout is larger than `isize::MAX` bytes.
#[inline]
fn size(layout: Layout) -> i64 {
    layout.size() as i64
}

/// `ptr`, after counting `delta` bytes if the allocator gave one (null: nothing changed hands).
#[inline]
fn counted(ptr: *mut u8, delta: i64) -> *mut u8 {
    if !ptr.is_null() {
        count(delta);
    }
    ptr
}

// SAFETY: every call is handed to `A` unchanged; the count only reads the layouts.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(self.0.alloc(layout), size(layout))
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(self.0.alloc_zeroed(layout), size(layout))
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout);
        count(-size(layout));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(
            self.0.realloc(ptr, layout, new_size),
            new_size as i64 - size(layout),
        )
    }
}

impl<A> CountingAllocator<A> {
    /// Marks the count as kept; `main` calls it before anything else.
    pub fn start(&self) {
        COUNTING.store(true, Ordering::Relaxed);
    }
}

/// Bytes allocated through [`CountingAllocator`] and not yet freed, when it is the global
/// allocator (and [`CountingAllocator::start`] was called); none otherwise.
pub fn live_bytes() -> Option<u64> {
    if !COUNTING.load(Ordering::Relaxed) {
        return None;
    }
    let sum: i64 = SLOTS_BYTES
        .iter()
        .map(|s| s.0.load(Ordering::Relaxed))
        .sum();
    Some(u64::try_from(sum).unwrap_or(0))
}
