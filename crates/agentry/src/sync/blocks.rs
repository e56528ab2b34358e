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
//!   leave in the allocator's heap, which then grows). A chunk serves one class; its header
//!   (the blocks carved from it, and a bit per block, set while the block is free in the
//!   class's depot) is never a block. A freed block is kept, free, for the next value of its
//!   class, whatever its type and whichever env of the process makes it (each block without
//!   a header of its own: a 144-byte cell takes 144 bytes, a 160-byte `malloc` chunk
//!   otherwise).
//! - A chunk's provenance is exposed when it is taken, and a block given back is listed by
//!   address with it: the pointer a value was dropped through may reach that value's bytes
//!   only (one made from a reference to a trait object does), and the block's next value may
//!   be larger within the class.
//! - A chunk leaves its class as soon as every block carved from it is free in the class's
//!   depot: it becomes a spare chunk, empty, that any class takes (the newest first) before
//!   asking the global allocator. [`SPARE_CHUNKS`] spare chunks are kept however long they
//!   stay spare; one more that has been spare for [`SPARE_AGE`] goes back to the global
//!   allocator as the store next takes or gives a chunk. So a burst of one size leaves its
//!   memory to the next burst of any size (a burst that follows soon takes memory already
//!   touched, not pages the kernel must fault in again — glibc unmaps a thread's heap once
//!   it is all free), and memory a burst left is given back once bursts stop, at the cost of
//!   a bit and a count per block handed in. What the store keeps when nothing takes or
//!   frees a chunk is the spare chunks, the chunks being carved, and chunks with a block in
//!   use or in a thread's magazines (at most `2 × MAGAZINE` per class and thread).
//! - A depot hands out the free blocks of one chunk at a time, in address order (the chunk
//!   that got a free block last first), and carves new ones only when no chunk of its class
//!   has one free: a burst reuses memory a chunk at a time, not blocks scattered over all of
//!   it as they were freed.
//! - Each thread keeps, per class, two magazines of free blocks (a loaded one it takes from
//!   and frees to, and a previous one, empty or full): most takes and frees touch nothing
//!   another thread touches. A thread whose magazines are full hands one full magazine to its
//!   class's depot; one whose magazines are empty takes one from there. Each class's depot is
//!   one lock, taken once per [`MAGAZINE`] blocks at most; a class's lock is taken before the
//!   chunks' (spare ones and the count), never after.
//! - A thread that exits hands its magazines to the depot; a thread whose thread-locals are
//!   gone (a value dropped by another thread-local's destructor) takes and frees one block at
//!   a time through the depot.
//! - Nothing of a free block is read or written while it is free: magazines are arrays of
//!   their blocks' addresses, and a depot marks them in their chunk's header (an intrusive
//!   list would read each block as it is taken, a cache miss on every reuse of a block freed
//!   long ago, on the path of the next take).
//! - A [`BlockArc`] counts its references as `Arc` does (an increment `Relaxed`, a decrement
//!   `Release`, the last one `Acquire` before the value is dropped and its block given back);
//!   it has no weak references. Its loom model: `sync/loom_tests.rs`.

use super::atomic::{AtomicUsize, Ordering, fence};
use parking_lot::Mutex;
use std::alloc::{self, Layout};
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

/// The step between size classes, and the largest alignment a block has.
pub(crate) const STEP: usize = 16;
/// The largest value kept in a block.
pub(crate) const MAX_BLOCK: usize = 1024;
const CLASSES: usize = MAX_BLOCK / STEP;
/// Blocks a magazine holds when full.
pub(crate) const MAGAZINE: usize = 32;
/// The bytes blocks are carved from at a time.
const CHUNK: usize = 64 * 1024;
/// The most blocks a chunk holds (of the smallest class, were there no header).
const MOST_BLOCKS: usize = CHUNK / STEP;
/// The bytes at a chunk's start that are its header, never a block.
const HEADER: usize = mem::size_of::<Header>().next_multiple_of(STEP);
/// Empty chunks kept for the next blocks of any class however long they stay empty (4 MiB).
pub(crate) const SPARE_CHUNKS: usize = 64;
/// How long more empty chunks are kept for the next blocks of any class.
pub(crate) const SPARE_AGE: Duration = Duration::from_secs(1);

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

/// A chunk's header (ground rules): which of the blocks carved from it are free in its
/// class's depot.
#[repr(C)]
struct Header {
    /// Blocks carved from the chunk (its first ones).
    carved: u32,
    /// Of those, the ones free in the depot: their bits are set in `free`.
    idle: u32,
    /// Where the chunk is in its depot's `partial` list, if `idle > 0`.
    partial_at: u32,
    /// A bit per block, set while the block is free in the depot.
    free: [u64; MOST_BLOCKS / 64],
}

/// The blocks of `class` a chunk holds.
fn blocks_per_chunk(class: usize) -> u32 {
    ((CHUNK - HEADER) / block_size(class)) as u32
}

/// Block `index` of `chunk`, whose blocks are of `size` bytes.
fn block_at(chunk: *mut u8, index: usize, size: usize) -> NonNull<u8> {
    // SAFETY: a block of the chunk, past its header: not null.
    unsafe { NonNull::new_unchecked(chunk.wrapping_add(HEADER + index * size)) }
}

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
/// `chunk` is a chunk of a depot whose lock the caller holds (a chunk's header is touched
/// only under its class's lock), and the reference is the only one to that header while it
/// lives.
unsafe fn header<'a>(chunk: *mut u8) -> &'a mut Header {
    // SAFETY: caller contract; a chunk's first bytes are its header (ground rules).
    unsafe { &mut *chunk.cast::<Header>() }
}

/// The chunks the store took from the global allocator and has not given back: the count,
/// and the empty ones kept for any class.
struct Chunks {
    /// Empty chunks, kept for the next blocks of any class, each with when it became spare;
    /// the newest last.
    spare: VecDeque<(*mut u8, Instant)>,
    /// The spare chunks kept however long they have been spare.
    keep: usize,
    /// How long a spare chunk beyond those is kept.
    age: Duration,
    /// The clock ages are measured by (`Instant::now`; the tests' own in theirs).
    now: fn() -> Instant,
    /// The bytes of the chunks taken and not given back.
    reserved: u64,
}

// SAFETY: `Chunks` owns its spare chunks; it is only reached through its mutex.
unsafe impl Send for Chunks {}

static CHUNKS: Mutex<Chunks> = Mutex::new(Chunks::new(SPARE_CHUNKS, SPARE_AGE, Instant::now));

impl Chunks {
    const fn new(keep: usize, age: Duration, now: fn() -> Instant) -> Self {
        Chunks {
            spare: VecDeque::new(),
            keep,
            age,
            now,
            reserved: 0,
        }
    }

    fn layout() -> Layout {
        Layout::from_size_align(CHUNK, STEP).expect("invariant: a valid layout")
    }

    /// An empty chunk: the newest spare one, or a new one.
    fn take(&mut self) -> *mut u8 {
        if let Some((chunk, _)) = self.spare.pop_back() {
            self.expire();
            return chunk;
        }
        let layout = Self::layout();
        // SAFETY: the layout has a non-zero size.
        let chunk = unsafe { alloc::alloc(layout) };
        if chunk.is_null() {
            alloc::handle_alloc_error(layout);
        }
        // Blocks given back are listed by address again (see `release`).
        let _ = chunk.expose_provenance();
        self.reserved += CHUNK as u64;
        chunk
    }

    /// Keeps `chunk`, none of whose blocks is used or listed any more, spare.
    fn give(&mut self, chunk: *mut u8) {
        self.spare.push_back((chunk, (self.now)()));
        self.expire();
    }

    /// Gives back the spare chunks beyond `keep` that have been spare longer than `age`.
    fn expire(&mut self) {
        if self.spare.len() <= self.keep {
            return;
        }
        let now = (self.now)();
        while self.spare.len() > self.keep
            && let Some(&(chunk, since)) = self.spare.front()
            && now.duration_since(since) >= self.age
        {
            self.spare.pop_front();
            // SAFETY: taken in `take` with this layout; nothing uses it any more (it is
            // spare: none of its blocks is used or listed).
            unsafe { alloc::dealloc(chunk, Self::layout()) };
            self.reserved -= CHUNK as u64;
        }
    }
}

/// The blocks of one size class that no thread holds: the class's chunks, the free blocks in
/// them (their headers' bits), and the chunk being carved.
struct Depot {
    /// Every chunk of the class, sorted by address.
    chunks: Vec<*mut u8>,
    /// The chunks with a free block here, in the order they got one.
    partial: Vec<*mut u8>,
    /// The blocks free here.
    idle: usize,
    /// The chunk blocks are carved from when no chunk has one free (null before the first).
    carving: *mut u8,
    /// The chunk a block was last found in (null if none): a magazine's blocks mostly share
    /// one.
    found: *mut u8,
}

// SAFETY: the depot owns its chunks and the free blocks in them; it is only reached through
// its mutex.
unsafe impl Send for Depot {}

static DEPOTS: [Mutex<Depot>; CLASSES] = [const { Mutex::new(Depot::new()) }; CLASSES];

impl Depot {
    const fn new() -> Self {
        Depot {
            chunks: Vec::new(),
            partial: Vec::new(),
            idle: 0,
            carving: ptr::null_mut(),
            found: ptr::null_mut(),
        }
    }

    /// A magazine of free blocks of `class` (never empty), in address order: free ones of the
    /// chunks that have some, or fresh ones carved.
    fn refill(&mut self, class: usize, chunks: &Mutex<Chunks>) -> Magazine {
        let size = block_size(class);
        let words = (blocks_per_chunk(class) as usize).div_ceil(64);
        let mut magazine = Magazine::EMPTY;
        while magazine.len < MAGAZINE
            && let Some(&chunk) = self.partial.last()
        {
            // SAFETY: a chunk of this depot, whose lock is held.
            let h = unsafe { header(chunk) };
            'words: for (word_at, word) in h.free[..words].iter_mut().enumerate() {
                while *word != 0 {
                    let bit = word.trailing_zeros() as usize;
                    *word &= *word - 1;
                    magazine.push(block_at(chunk, word_at * 64 + bit, size));
                    h.idle -= 1;
                    if magazine.len == MAGAZINE {
                        break 'words;
                    }
                }
            }
            if h.idle == 0 {
                self.partial.pop();
            }
        }
        self.idle -= magazine.len;
        if magazine.len == 0 {
            if self.carving.is_null()
                // SAFETY: a chunk of this depot, whose lock is held.
                || unsafe { header(self.carving) }.carved == blocks_per_chunk(class)
            {
                self.carve_new(chunks);
            }
            // SAFETY: as above.
            let h = unsafe { header(self.carving) };
            let fresh = (blocks_per_chunk(class) - h.carved).min(MAGAZINE as u32);
            for index in h.carved..h.carved + fresh {
                magazine.push(block_at(self.carving, index as usize, size));
            }
            h.carved += fresh;
        }
        // Taken from the end: the lowest address first.
        magazine.blocks[..magazine.len].reverse();
        magazine
    }

    /// Carves from a new chunk from now on.
    fn carve_new(&mut self, chunks: &Mutex<Chunks>) {
        let chunk = chunks.lock().take();
        // SAFETY: the chunk is ours and its first bytes are its header (ground rules).
        unsafe {
            chunk.cast::<Header>().write(Header {
                carved: 0,
                idle: 0,
                partial_at: 0,
                free: [0; MOST_BLOCKS / 64],
            })
        };
        let at = self.chunks.partition_point(|&c| c.addr() < chunk.addr());
        self.chunks.insert(at, chunk);
        self.carving = chunk;
    }

    /// The chunk of this depot `block` was carved from.
    fn chunk_of(&mut self, block: *mut u8) -> *mut u8 {
        if !self.found.is_null() && block.addr().wrapping_sub(self.found.addr()) < CHUNK {
            return self.found;
        }
        self.found = chunk_of(&self.chunks, block);
        self.found
    }

    /// Keeps the blocks of `magazine` free here for the threads that run out of blocks of
    /// `class`; a chunk whose carved blocks are all free then goes to `chunks`.
    fn hand_in(&mut self, class: usize, magazine: Magazine, chunks: &Mutex<Chunks>) {
        let size = block_size(class);
        for block in magazine.blocks() {
            let chunk = self.chunk_of(block);
            // SAFETY: a chunk of this depot, whose lock is held.
            let h = unsafe { header(chunk) };
            let index = (block.addr() - chunk.addr() - HEADER) / size;
            let bit = 1 << (index % 64);
            debug_assert!(index < h.carved as usize && h.free[index / 64] & bit == 0);
            h.free[index / 64] |= bit;
            h.idle += 1;
            self.idle += 1;
            if h.idle == 1 {
                h.partial_at = self.partial.len() as u32;
                self.partial.push(chunk);
            }
            if h.idle == h.carved {
                self.give_back(chunk, chunks);
            }
        }
    }

    /// Gives `chunk`, whose carved blocks are all free here, to `chunks`.
    fn give_back(&mut self, chunk: *mut u8, chunks: &Mutex<Chunks>) {
        // SAFETY: a chunk of this depot, whose lock is held.
        let h = unsafe { header(chunk) };
        let at = h.partial_at as usize;
        self.partial.swap_remove(at);
        if let Some(&moved) = self.partial.get(at) {
            // SAFETY: another chunk of this depot (the lock is held; `h` is `chunk`'s).
            unsafe { header(moved) }.partial_at = at as u32;
        }
        self.idle -= h.carved as usize;
        let at = self.chunks.partition_point(|&c| c.addr() < chunk.addr());
        debug_assert_eq!(self.chunks[at], chunk);
        self.chunks.remove(at);
        if self.carving == chunk {
            // Its uncarved part goes with it; the next refill carves another.
            self.carving = ptr::null_mut();
        }
        if self.found == chunk {
            self.found = ptr::null_mut();
        }
        chunks.lock().give(chunk);
    }

    /// One block of `class`, for a thread without its magazines.
    fn take_one(&mut self, class: usize, chunks: &Mutex<Chunks>) -> NonNull<u8> {
        let mut magazine = self.refill(class, chunks);
        let block = magazine.pop().expect("invariant: a refill is never empty");
        self.hand_in(class, magazine, chunks);
        block
    }

    /// Keeps `block`, freed by a thread without its magazines.
    fn give_one(&mut self, class: usize, block: NonNull<u8>, chunks: &Mutex<Chunks>) {
        let mut magazine = Magazine::EMPTY;
        magazine.push(block);
        self.hand_in(class, magazine, chunks);
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
            *loaded = DEPOTS[class].lock().refill(class, &CHUNKS);
        }
        loaded.pop().expect("invariant: a refill is never empty")
    }

    fn give(&self, class: usize, block: NonNull<u8>) {
        let [loaded, previous] = self.of(class);
        if loaded.len == MAGAZINE {
            if previous.len > 0 {
                let full = mem::replace(previous, mem::replace(loaded, Magazine::EMPTY));
                DEPOTS[class].lock().hand_in(class, full, &CHUNKS);
            } else {
                mem::swap(loaded, previous);
            }
        }
        loaded.push(block);
    }
}

impl Drop for Magazines {
    fn drop(&mut self) {
        for (class, pair) in self.0.get_mut().iter_mut().enumerate() {
            for magazine in pair.iter_mut().flat_map(|pair| pair.iter_mut()) {
                let magazine = mem::replace(magazine, Magazine::EMPTY);
                if magazine.len > 0 {
                    DEPOTS[class].lock().hand_in(class, magazine, &CHUNKS);
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
    /// Free blocks in the depots and spare chunks: memory the next values will reuse. The
    /// threads' own magazines hold at most `2 × MAGAZINE` more free blocks per class each.
    pub(crate) idle: u64,
}

/// What the store holds now (each part read under its own lock: exact while nothing takes or
/// frees a block).
pub(crate) fn usage() -> Usage {
    let mut idle = 0;
    for (class, depot) in DEPOTS.iter().enumerate() {
        idle += (depot.lock().idle * block_size(class)) as u64;
    }
    let chunks = CHUNKS.lock();
    Usage {
        reserved: chunks.reserved,
        idle: idle + (chunks.spare.len() * CHUNK) as u64,
    }
}

/// Memory for a value of `layout` (ground rules).
fn acquire(layout: Layout) -> NonNull<u8> {
    match class_of(layout) {
        Some(class) => MAGAZINES
            .try_with(|m| m.take(class))
            .unwrap_or_else(|_| DEPOTS[class].lock().take_one(class, &CHUNKS)),
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
                DEPOTS[class].lock().give_one(class, at, &CHUNKS);
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
