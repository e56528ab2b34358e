//! Blocks: the memory agents' cells live in (`agent/cell.rs`), owned through [`BlockBox`], and
//! a pool agent's queue (`disp/thread_pool/agent_queue.rs`), shared through [`BlockArc`].
//!
//! A cell is made as its agent is added to a coop and freed as the agent finishes — a tree of
//! a million agents makes a million in a burst, and on a thread pool frees them on other
//! threads than the ones that made them. Through the global allocator (glibc's `malloc`)
//! each cost ~250 instructions to make and ~140 to free, a fresh one missing the allocator's
//! per-thread cache, and a free from another thread takes the making thread's arena lock:
//! the skynet tree spent 8 % of its instructions there on one thread, 14 % of its time on a
//! pool of two. So cells take their memory from a store of their own.
//!
//! # Ground rules
//!
//! - A value of at most [`MAX_BLOCK`] bytes aligned to at most [`STEP`] takes a block of its
//!   size class (its size rounded up to a multiple of 16 bytes); any other value (and a
//!   zero-sized one) is allocated as `Box` would, by the global allocator.
//! - Blocks are carved from chunks of [`CHUNK`] bytes taken from the global allocator (no
//!   alignment beyond 16 asked: an aligned request would not fit the holes chunks given back
//!   leave in the allocator's heap, which then grows); a chunk's first 16 bytes are its
//!   header (the bytes carved from it, and a count the trim uses), never a block. A freed
//!   block is kept, free, for the next value of its class, whatever its type and whichever env
//!   of the process makes it (each block without a header of its own: a 144-byte cell takes
//!   144 bytes, a 160-byte `malloc` chunk otherwise).
//! - A chunk's provenance is exposed when it is taken, and a block given back is listed by
//!   address with it: the pointer a value was dropped through may reach that value's bytes
//!   only (one made from a reference to a trait object does), and the block's next value may
//!   be larger within the class.
//! - A chunk goes back to the global allocator once every block carved from it is free in the
//!   depot (*trim*, under the depot's lock), when a new chunk is about to be taken while the
//!   depot holds at least [`TRIM_MIN`] free bytes and a quarter of what the store reserved more
//!   than after the last trim. So agents of one size do not take new memory while a burst of
//!   another size left its memory free here, and the trim's walk over the free blocks is paid
//!   only then. A store nobody takes from keeps what it holds (`EnvStats::agent_memory_*`
//!   shows it). The chunk being carved goes back too if every block carved from it is free
//!   (the rest of it unused); a chunk with a free block in a thread's magazines (at most
//!   `2 × MAGAZINE` per class and thread) does not.
//! - Each thread keeps, per class, two magazines of free blocks (a loaded one it takes from
//!   and frees to, and a previous one, empty or full): most takes and frees touch nothing
//!   another thread touches. A thread whose magazines are full hands one full magazine to the
//!   depot; one whose magazines are empty takes one from there, or carves a fresh one. The
//!   depot is one lock, taken once per [`MAGAZINE`] blocks at most.
//! - A thread that exits hands its magazines to the depot; a thread whose thread-locals are
//!   gone (a value dropped by another thread-local's destructor) takes and frees one block at
//!   a time through the depot.
//! - Nothing of a free block is read or written while it is free: magazines are arrays of
//!   their blocks' addresses (an intrusive list would read each block as it is taken, a cache
//!   miss on every reuse of a block freed long ago, on the path of the next take).
//! - A [`BlockArc`] counts its references as `Arc` does (an increment `Relaxed`, a decrement
//!   `Release`, the last one `Acquire` before the value is dropped and its block given back);
//!   it has no weak references. Its loom model: `sync/loom_tests.rs`.

use super::atomic::{AtomicUsize, Ordering, fence};
use parking_lot::Mutex;
use std::alloc::{self, Layout};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

/// The step between size classes, and the largest alignment a block has.
pub(crate) const STEP: usize = 16;
/// The largest value kept in a block.
pub(crate) const MAX_BLOCK: usize = 1024;
const CLASSES: usize = MAX_BLOCK / STEP;
/// Blocks a magazine holds when full.
pub(crate) const MAGAZINE: usize = 32;
/// The bytes blocks are carved from at a time (and the chunks' alignment).
const CHUNK: usize = 64 * 1024;
/// The bytes at a chunk's start that are its header.
const HEADER: usize = STEP;
/// The free bytes in the depot below which it never trims.
pub(crate) const TRIM_MIN: u64 = 4 << 20;

/// The class of a value of `layout`, if it takes a block.
fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() != 0 && layout.size() <= MAX_BLOCK && layout.align() <= STEP)
        .then(|| (layout.size() - 1) / STEP)
}

/// The bytes of a block of `class`.
fn block_size(class: usize) -> usize {
    (class + 1) * STEP
}

/// Free blocks of one class: their addresses, kept apart from the blocks (a block freed long
/// ago is not read to be taken again: its next value is written into it first).
struct Magazine {
    len: usize,
    blocks: [*mut u8; MAGAZINE],
}

// SAFETY: a magazine owns the free blocks it lists (no other pointer to them is used while
// they are free, ground rules), so it may move to another thread with them.
unsafe impl Send for Magazine {}

impl Magazine {
    const EMPTY: Magazine = Magazine {
        len: 0,
        blocks: [ptr::null_mut(); MAGAZINE],
    };

    fn pop(&mut self) -> Option<NonNull<u8>> {
        self.len = self.len.checked_sub(1)?;
        Some(NonNull::new(self.blocks[self.len]).expect("invariant: a listed block is not null"))
    }

    /// The blocks it lists.
    fn blocks(&self) -> impl Iterator<Item = *mut u8> + '_ {
        self.blocks[..self.len].iter().copied()
    }

    /// Lists `block`, a free block of this magazine's class that no list holds; the magazine
    /// is not full.
    fn push(&mut self, block: NonNull<u8>) {
        self.blocks[self.len] = block.as_ptr();
        self.len += 1;
    }
}

/// A chunk's header (ground rules).
struct Header {
    /// The bytes of the blocks carved from the chunk.
    carved: u64,
    /// During a trim: the bytes of its blocks found free in the depot, or [`GONE`].
    free: u64,
}

/// A chunk's `free` once the trim has decided to give it back.
const GONE: u64 = u64::MAX;

/// The chunk of `chunks` (sorted by address) that `block` was carved from.
fn chunk_of(chunks: &[*mut u8], block: *mut u8) -> *mut u8 {
    let after = chunks.partition_point(|&chunk| chunk.addr() <= block.addr());
    debug_assert!(after > 0 && block.addr() < chunks[after - 1].addr() + CHUNK);
    chunks[after - 1]
}

/// The header of `chunk`.
///
/// # Safety
///
/// `chunk` is a chunk of the depot, whose lock the caller holds (headers are touched only
/// under it), and the reference is the only one to that header while it lives.
unsafe fn header<'a>(chunk: *mut u8) -> &'a mut Header {
    // SAFETY: caller contract; a chunk's first bytes are its header (ground rules).
    unsafe { &mut *chunk.cast::<Header>() }
}

/// What the threads share: full magazines and the chunk blocks are carved from.
struct Depot {
    magazines: [Vec<Magazine>; CLASSES],
    /// The bytes of the blocks its magazines list.
    idle: u64,
    /// Every chunk taken and not given back, sorted by address.
    chunks: Vec<*mut u8>,
    /// The chunk being carved (null before the first), and the unused part of it.
    current: *mut u8,
    chunk: *mut u8,
    chunk_left: usize,
    /// The bytes of the chunks it holds.
    reserved: u64,
    /// `idle` at which it trims next.
    trim_at: u64,
}

// SAFETY: the depot owns its chunks, the blocks its magazines list and the unused part of its
// current chunk; it is only reached through its mutex.
unsafe impl Send for Depot {}

static DEPOT: Mutex<Depot> = Mutex::new(Depot::new());

impl Depot {
    const fn new() -> Self {
        Depot {
            magazines: [const { Vec::new() }; CLASSES],
            idle: 0,
            chunks: Vec::new(),
            current: ptr::null_mut(),
            chunk: ptr::null_mut(),
            chunk_left: 0,
            reserved: 0,
            trim_at: TRIM_MIN,
        }
    }

    /// A magazine of free blocks of `class` (never empty): a full one handed in by a thread,
    /// or one carved from the chunk.
    fn refill(&mut self, class: usize) -> Magazine {
        let size = block_size(class);
        if let Some(magazine) = self.magazines[class].pop() {
            self.idle -= (magazine.len * size) as u64;
            return magazine;
        }
        if self.chunk_left < size {
            if self.idle >= self.trim_at {
                // Memory of other classes lies free: give back what can go before taking more.
                self.trim();
            }
            self.new_chunk();
        }
        let mut magazine = Magazine::EMPTY;
        while magazine.len < MAGAZINE && self.chunk_left >= size {
            // SAFETY: `chunk` has `chunk_left` unused bytes, 16-aligned at its start.
            let block = unsafe { NonNull::new_unchecked(self.chunk) };
            self.chunk = self.chunk.wrapping_add(size);
            self.chunk_left -= size;
            magazine.push(block);
        }
        // SAFETY: the current chunk, of this depot, whose lock is held.
        unsafe { header(self.current) }.carved += (magazine.len * size) as u64;
        magazine
    }

    fn chunk_layout() -> Layout {
        Layout::from_size_align(CHUNK, STEP).expect("invariant: a valid layout")
    }

    fn new_chunk(&mut self) {
        let layout = Self::chunk_layout();
        // SAFETY: the layout has a non-zero size.
        let chunk = unsafe { alloc::alloc(layout) };
        if chunk.is_null() {
            alloc::handle_alloc_error(layout);
        }
        // SAFETY: the chunk is ours and its first bytes are its header (ground rules).
        unsafe { chunk.cast::<Header>().write(Header { carved: 0, free: 0 }) };
        // Blocks given back are listed by address again (see `release`).
        let _ = chunk.expose_provenance();
        let at = self.chunks.partition_point(|&c| c.addr() < chunk.addr());
        self.chunks.insert(at, chunk);
        // What was left of the last chunk (less than a block) stays unused.
        self.current = chunk;
        self.chunk = chunk.wrapping_add(HEADER);
        self.chunk_left = CHUNK - HEADER;
        self.reserved += CHUNK as u64;
    }

    /// Keeps `magazine` (not empty) for the threads that run out of blocks of `class`.
    fn hand_in(&mut self, class: usize, magazine: Magazine) {
        debug_assert!(magazine.len > 0);
        self.idle += (magazine.len * block_size(class)) as u64;
        self.magazines[class].push(magazine);
    }

    /// Gives back to the global allocator every chunk whose blocks are all free here (ground
    /// rules), and sets when to trim next.
    fn trim(&mut self) {
        for &chunk in &self.chunks {
            // SAFETY: a chunk of this depot, whose lock is held.
            unsafe { header(chunk) }.free = 0;
        }
        for (class, magazines) in self.magazines.iter().enumerate() {
            let size = block_size(class) as u64;
            for block in magazines.iter().flat_map(Magazine::blocks) {
                // SAFETY: a block carved from a chunk of this depot, whose lock is held.
                unsafe { header(chunk_of(&self.chunks, block)) }.free += size;
            }
        }
        let mut gone = 0;
        for &chunk in &self.chunks {
            // SAFETY: a chunk of this depot, whose lock is held.
            let h = unsafe { header(chunk) };
            if h.free == h.carved {
                h.free = GONE;
                gone += 1;
                if chunk == self.current {
                    // Its unused part goes with it; the next refill takes a new chunk.
                    self.current = ptr::null_mut();
                    self.chunk = ptr::null_mut();
                    self.chunk_left = 0;
                }
            }
        }
        if gone > 0 {
            self.idle = 0;
            for (class, magazines) in self.magazines.iter_mut().enumerate() {
                let mut kept = Vec::with_capacity(magazines.len());
                let mut refilled = Magazine::EMPTY;
                for mut magazine in magazines.drain(..) {
                    while let Some(block) = magazine.pop() {
                        let chunk = chunk_of(&self.chunks, block.as_ptr());
                        // SAFETY: as above (a block's chunk is given back only below).
                        if unsafe { header(chunk) }.free == GONE {
                            continue;
                        }
                        refilled.push(block);
                        if refilled.len == MAGAZINE {
                            kept.push(mem::replace(&mut refilled, Magazine::EMPTY));
                        }
                    }
                }
                if refilled.len > 0 {
                    kept.push(refilled);
                }
                let blocks: usize = kept.iter().map(|m| m.len).sum();
                self.idle += (blocks * block_size(class)) as u64;
                *magazines = kept;
            }
            self.chunks.retain(|&chunk| {
                // SAFETY: a chunk of this depot, whose lock is held.
                let keep = unsafe { header(chunk) }.free != GONE;
                if !keep {
                    // SAFETY: taken in `new_chunk` with this layout; none of its blocks is
                    // listed or used any more (all were free here, and are unlisted above).
                    unsafe { alloc::dealloc(chunk, Self::chunk_layout()) };
                }
                keep
            });
            self.reserved -= (gone * CHUNK) as u64;
        }
        self.trim_at = self.idle + (self.reserved / 4).max(TRIM_MIN);
    }

    /// One block of `class`, for a thread without its magazines.
    fn take_one(&mut self, class: usize) -> NonNull<u8> {
        let mut magazine = self.refill(class);
        let block = magazine.pop().expect("invariant: a refill is never empty");
        if magazine.len > 0 {
            self.hand_in(class, magazine);
        }
        block
    }

    /// Keeps `block`, freed by a thread without its magazines.
    fn give_one(&mut self, class: usize, block: NonNull<u8>) {
        let mut magazine = Magazine::EMPTY;
        if let Some(last) = self.magazines[class].last()
            && last.len < MAGAZINE
        {
            magazine = self.magazines[class].pop().expect("just seen");
            self.idle -= (magazine.len * block_size(class)) as u64;
        }
        magazine.push(block);
        self.hand_in(class, magazine);
    }
}

/// A thread's magazines: per class, the loaded one and the previous one (empty or full), made
/// at the thread's first block of the class (most threads use a few classes).
struct Magazines(UnsafeCell<[Option<Box<[Magazine; 2]>>; CLASSES]>);

thread_local! {
    static MAGAZINES: Magazines = const { Magazines(UnsafeCell::new([const { None }; CLASSES])) };
}

impl Magazines {
    /// The magazines of `class`. The borrow ends before anything else reaches them: the
    /// store calls nothing that takes or frees a block while it holds it.
    #[allow(clippy::mut_from_ref)]
    fn of(&self, class: usize) -> &mut [Magazine; 2] {
        // SAFETY: the magazines are this thread's (a thread-local), and each use below ends
        // before the next begins (nothing in them re-enters the store; making a class's pair
        // allocates through the global allocator, not the store).
        let slot = unsafe { &mut (*self.0.get())[class] };
        slot.get_or_insert_with(|| Box::new([Magazine::EMPTY, Magazine::EMPTY]))
    }

    fn take(&self, class: usize) -> NonNull<u8> {
        let [loaded, previous] = self.of(class);
        if let Some(block) = loaded.pop() {
            return block;
        }
        if previous.len > 0 {
            mem::swap(loaded, previous);
        } else {
            *loaded = DEPOT.lock().refill(class);
        }
        loaded.pop().expect("invariant: a refill is never empty")
    }

    fn give(&self, class: usize, block: NonNull<u8>) {
        let [loaded, previous] = self.of(class);
        if loaded.len == MAGAZINE {
            if previous.len > 0 {
                let full = mem::replace(previous, mem::replace(loaded, Magazine::EMPTY));
                DEPOT.lock().hand_in(class, full);
            } else {
                mem::swap(loaded, previous);
            }
        }
        loaded.push(block);
    }
}

impl Drop for Magazines {
    fn drop(&mut self) {
        let mut depot = DEPOT.lock();
        for (class, pair) in self.0.get_mut().iter_mut().enumerate() {
            for magazine in pair.iter_mut().flat_map(|pair| pair.iter_mut()) {
                let magazine = mem::replace(magazine, Magazine::EMPTY);
                if magazine.len > 0 {
                    depot.hand_in(class, magazine);
                }
            }
        }
    }
}

/// What the store holds (process-wide), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    /// Taken from the global allocator, in chunks, and not given back yet (ground rules).
    pub(crate) reserved: u64,
    /// Free blocks in the depot's magazines: memory the next values will reuse. The threads'
    /// own magazines hold at most `2 × MAGAZINE` more free blocks per class each.
    pub(crate) idle: u64,
}

/// What the store holds now.
pub(crate) fn usage() -> Usage {
    let depot = DEPOT.lock();
    Usage {
        reserved: depot.reserved,
        idle: depot.idle,
    }
}

/// Memory for a value of `layout` (ground rules).
fn acquire(layout: Layout) -> NonNull<u8> {
    match class_of(layout) {
        Some(class) => MAGAZINES
            .try_with(|m| m.take(class))
            .unwrap_or_else(|_| DEPOT.lock().take_one(class)),
        None if layout.size() == 0 => {
            // A dangling pointer with the alignment asked (as `Box` does).
            NonNull::new(ptr::without_provenance_mut(layout.align()))
                .expect("invariant: an alignment is not 0")
        }
        None => {
            // SAFETY: the layout has a non-zero size.
            let at = unsafe { alloc::alloc(layout) };
            NonNull::new(at).unwrap_or_else(|| alloc::handle_alloc_error(layout))
        }
    }
}

/// Gives back the memory of a value of `layout` at `at`, from [`acquire`].
///
/// # Safety
///
/// `at` came from `acquire(layout)`, holds no value any more, and is not used again.
unsafe fn release(at: NonNull<u8>, layout: Layout) {
    match class_of(layout) {
        Some(class) => {
            // The pointer a value was dropped through may reach that value's bytes only (one
            // retyped from a reference does): the block is listed by its address, with the
            // chunk's provenance (exposed when it was taken), so its next value may use all of
            // it.
            let at = NonNull::new(ptr::with_exposed_provenance_mut::<u8>(at.as_ptr().addr()))
                .expect("invariant: a block is not null");
            if MAGAZINES.try_with(|m| m.give(class, at)).is_err() {
                DEPOT.lock().give_one(class, at);
            }
        }
        None if layout.size() == 0 => {}
        // SAFETY: allocated by the global allocator with this layout (caller contract).
        None => unsafe { alloc::dealloc(at.as_ptr(), layout) },
    }
}

/// A value in memory of the store (ground rules), owned as a `Box` owns its value: dropping
/// it drops the value and gives its memory back.
pub(crate) struct BlockBox<T: ?Sized> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: a `BlockBox` owns its value as a `Box` does; its memory is the store's, which any
// thread may give back.
unsafe impl<T: ?Sized + Send> Send for BlockBox<T> {}
// SAFETY: as above: shared access is access to the value.
unsafe impl<T: ?Sized + Sync> Sync for BlockBox<T> {}

impl<T> BlockBox<MaybeUninit<T>> {
    /// Memory for a `T`, not written yet.
    pub(crate) fn new_uninit() -> Self {
        BlockBox {
            ptr: acquire(Layout::new::<T>()).cast(),
            _owns: PhantomData,
        }
    }

    /// Where the `T` goes.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.as_ptr().cast()
    }

    /// Writes `value` in the memory.
    pub(crate) fn write(self, value: T) -> BlockBox<T> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the memory is ours, sized and aligned for a `T`, and holds nothing.
        unsafe { this.ptr.as_ptr().cast::<T>().write(value) };
        BlockBox {
            ptr: this.ptr.cast(),
            _owns: PhantomData,
        }
    }
}

impl<T> BlockBox<T> {
    /// `value`, in the store's memory.
    pub(crate) fn new(value: T) -> Self {
        BlockBox::new_uninit().write(value)
    }

    /// The value, owned from now on through the pointer (see [`from_raw`](Self::from_raw)).
    fn into_raw(self) -> NonNull<T> {
        ManuallyDrop::new(self).ptr
    }

    /// The value `into_raw` gave.
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw`, and owns its value: it is not used again.
    unsafe fn from_raw(ptr: NonNull<T>) -> Self {
        BlockBox {
            ptr,
            _owns: PhantomData,
        }
    }

    /// The value, its memory given back.
    pub(crate) fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: the value is moved out once, here (`this` is never dropped).
        let value = unsafe { this.ptr.as_ptr().read() };
        // SAFETY: from `acquire` for a `T`, which was moved out just above.
        unsafe { release(this.ptr.cast(), Layout::new::<T>()) };
        value
    }
}

impl<T: ?Sized> BlockBox<T> {
    /// The same value seen as a `U` — a trait object of it (`|c| c as &mut dyn Trait`) or,
    /// from a trait object, its concrete type (through `Any`). `view` must return the value
    /// itself: the same address and layout (checked; a panic otherwise, the value leaked).
    pub(crate) fn retype<U: ?Sized>(self, view: impl FnOnce(&mut T) -> &mut U) -> BlockBox<U> {
        let mut this = ManuallyDrop::new(self);
        let at = this.ptr.as_ptr();
        // SAFETY: the value is ours and alive; the borrow ends in `view`'s result.
        let before = Layout::for_value(unsafe { this.ptr.as_ref() });
        // SAFETY: as above; `this` is not touched again.
        let seen = view(unsafe { this.ptr.as_mut() });
        assert!(
            ptr::addr_eq(seen as *const U, at) && Layout::for_value(seen) == before,
            "invariant: a block is retyped as the value it holds"
        );
        BlockBox {
            ptr: NonNull::from(seen),
            _owns: PhantomData,
        }
    }
}

impl<T: ?Sized> Deref for BlockBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the value is ours and alive while the box is.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized> DerefMut for BlockBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as `deref`, and `&mut self` makes the access exclusive.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: ?Sized> Drop for BlockBox<T> {
    fn drop(&mut self) {
        /// Gives the memory back even if the value's drop panics.
        struct Release(NonNull<u8>, Layout);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: the memory came from `acquire(layout)`; its value has been dropped
                // (or its drop panicked): nothing uses it again.
                unsafe { release(self.0, self.1) };
            }
        }
        // SAFETY: the value is alive until the drop below.
        let layout = Layout::for_value(unsafe { self.ptr.as_ref() });
        let _release = Release(self.ptr.cast(), layout);
        // SAFETY: the value is ours, dropped once, here; the memory is released after it.
        unsafe { ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

/// A value shared by counted references, in a block of the store (ground rules): an `Arc`
/// without weak references.
pub(crate) struct BlockArc<T> {
    counted: NonNull<Counted<T>>,
    _owns: PhantomData<Counted<T>>,
}

/// What a [`BlockArc`]'s block holds.
struct Counted<T> {
    count: AtomicUsize,
    value: T,
}

/// More references than this abort the process, as `Arc` does (each takes memory somewhere,
/// so only a leak in a loop gets there).
const MAX_COUNT: usize = isize::MAX as usize;

// SAFETY: as `Arc<T>`: the value is shared between the threads that hold references and
// dropped by whichever lets go last.
unsafe impl<T: Send + Sync> Send for BlockArc<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for BlockArc<T> {}

impl<T> BlockArc<T> {
    pub(crate) fn new(value: T) -> Self {
        let counted = BlockBox::new(Counted {
            count: AtomicUsize::new(1),
            value,
        });
        BlockArc {
            counted: counted.into_raw(),
            _owns: PhantomData,
        }
    }

    fn counted(&self) -> &Counted<T> {
        // SAFETY: the block lives while a reference does; this one holds a count.
        unsafe { self.counted.as_ref() }
    }
}

impl<T> Clone for BlockArc<T> {
    fn clone(&self) -> Self {
        // Relaxed: a new reference is made from one that exists (ground rules).
        if self.counted().count.fetch_add(1, Ordering::Relaxed) > MAX_COUNT {
            std::process::abort();
        }
        BlockArc {
            counted: self.counted,
            _owns: PhantomData,
        }
    }
}

impl<T> Deref for BlockArc<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.counted().value
    }
}

impl<T> Drop for BlockArc<T> {
    fn drop(&mut self) {
        if self.counted().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other reference's use happened before their decrements (ground rules).
        fence(Ordering::Acquire);
        // SAFETY: the count reached 0: this was the last reference, and the block came from
        // `BlockBox::into_raw` in `new`.
        drop(unsafe { BlockBox::from_raw(self.counted) });
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
