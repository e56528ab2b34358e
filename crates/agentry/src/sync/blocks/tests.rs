//! The block store (run under miri by `scripts/test.sh`: a block freed twice, a value dropped
//! twice or read after its memory went back, or a leak, fails these).

use super::{BlockArc, BlockBox, MAGAZINE, MAX_BLOCK, STEP};
use parking_lot::Mutex;
use std::any::Any;
use std::collections::HashSet;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts its drops.
struct Counted {
    drops: Arc<AtomicUsize>,
    payload: [u64; 5],
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn counted(drops: &Arc<AtomicUsize>, n: u64) -> Counted {
    Counted {
        drops: Arc::clone(drops),
        payload: [n; 5],
    }
}

trait Named: Any {
    fn name(&self) -> u64;
}

impl Named for Counted {
    fn name(&self) -> u64 {
        self.payload[0]
    }
}

#[test]
fn a_value_is_dropped_once_and_its_block_is_taken_again() {
    let drops = Arc::new(AtomicUsize::new(0));
    let first = BlockBox::new(counted(&drops, 1));
    let at = &*first as *const Counted as usize;
    assert_eq!(at % STEP, 0, "a block is 16-aligned");
    assert_eq!(first.payload, [1; 5]);
    drop(first);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // The thread's loaded magazine gives back what it took last.
    let second = BlockBox::new(counted(&drops, 2));
    assert_eq!(&*second as *const Counted as usize, at);
    assert_eq!(second.payload, [2; 5]);
    drop(second);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn a_block_a_smaller_value_was_dropped_through_serves_a_larger_one_whole() {
    // 100 bytes seen as a trait object, dropped through that view, then 112 bytes (one class)
    // in the same block: the second value may use all of it (miri checks the provenance).
    trait Sized100 {
        fn first(&self) -> u8;
    }
    impl Sized100 for [u8; 100] {
        fn first(&self) -> u8 {
            self[0]
        }
    }
    let small: BlockBox<dyn Sized100> =
        BlockBox::new([1u8; 100]).retype(|v| v as &mut dyn Sized100);
    assert_eq!(small.first(), 1);
    let at = &*small as *const dyn Sized100 as *const u8 as usize;
    drop(small);
    let large = BlockBox::new([2u8; 112]);
    assert_eq!(&*large as *const [u8; 112] as usize, at, "the same block");
    assert!(large.iter().all(|&b| b == 2));
}

#[test]
fn into_inner_moves_the_value_out_without_dropping_it() {
    let drops = Arc::new(AtomicUsize::new(0));
    let value = BlockBox::new(counted(&drops, 7)).into_inner();
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert_eq!(value.payload, [7; 5]);
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_value_written_in_place_is_owned_like_any_other() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut place = BlockBox::<MaybeUninit<Counted>>::new_uninit();
    let at = place.as_mut_ptr() as usize;
    let written = place.write(counted(&drops, 3));
    assert_eq!(&*written as *const Counted as usize, at);
    drop(written);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Memory never written is given back without a drop.
    drop(BlockBox::<MaybeUninit<Counted>>::new_uninit());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_trait_object_is_dropped_through_its_vtable_and_turned_back() {
    let drops = Arc::new(AtomicUsize::new(0));
    let named: BlockBox<dyn Named> =
        BlockBox::new(counted(&drops, 4)).retype(|c| c as &mut dyn Named);
    assert_eq!(named.name(), 4);
    let concrete: BlockBox<Counted> = named.retype(|n| {
        (n as &mut dyn Any)
            .downcast_mut::<Counted>()
            .expect("a Counted")
    });
    assert_eq!(concrete.payload, [4; 5]);
    let named: BlockBox<dyn Named> = concrete.retype(|c| c as &mut dyn Named);
    drop(named);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
#[should_panic(expected = "retyped as the value it holds")]
fn a_retype_to_something_else_is_refused() {
    struct Pair(u64, u64);
    let pair = BlockBox::new(Pair(1, 2));
    assert_eq!(pair.0 + pair.1, 3);
    let _second = pair.retype(|p| &mut p.1);
}

#[test]
fn values_of_every_size_and_alignment_round_trip() {
    #[repr(align(32))]
    struct Wide([u8; 64]);
    let big = BlockBox::new([9u8; MAX_BLOCK + 1]);
    assert!(big.iter().all(|&b| b == 9));
    let wide = BlockBox::new(Wide([5; 64]));
    assert_eq!(&*wide as *const Wide as usize % 32, 0);
    assert!(wide.0.iter().all(|&b| b == 5));
    let unit = BlockBox::new(());
    let largest = BlockBox::new([3u8; MAX_BLOCK]);
    assert!(largest.iter().all(|&b| b == 3));
    let smallest = BlockBox::new(1u8);
    assert_eq!(*smallest, 1);
    drop((big, wide, unit, largest, smallest));
}

#[test]
fn magazines_overflow_to_the_depot_and_refill_from_it() {
    // More blocks than two magazines hold, live at once, all distinct, then freed: the
    // thread hands full magazines to the depot; taken again they are whole.
    let drops = Arc::new(AtomicUsize::new(0));
    let n = 5 * MAGAZINE + 3;
    let boxes: Vec<_> = (0..n as u64)
        .map(|i| BlockBox::new(counted(&drops, i)))
        .collect();
    let addresses: HashSet<usize> = boxes
        .iter()
        .map(|b| &**b as *const Counted as usize)
        .collect();
    assert_eq!(addresses.len(), n, "every live value has its own block");
    for (i, b) in boxes.iter().enumerate() {
        assert_eq!(b.payload, [i as u64; 5]);
    }
    drop(boxes);
    assert_eq!(drops.load(Ordering::SeqCst), n);
    let again: Vec<_> = (0..n as u64)
        .map(|i| BlockBox::new(counted(&drops, i)))
        .collect();
    for (i, b) in again.iter().enumerate() {
        assert_eq!(b.payload, [i as u64; 5]);
    }
    drop(again);
    assert_eq!(drops.load(Ordering::SeqCst), 2 * n);
}

#[test]
fn blocks_made_on_one_thread_are_freed_and_reused_on_others() {
    // One thread makes values, two others drop them and make their own (the pool's pattern),
    // then exit: their magazines go to the depot.
    let drops = Arc::new(AtomicUsize::new(0));
    let n = 3 * MAGAZINE;
    let made: Vec<_> = (0..2 * n as u64)
        .map(|i| BlockBox::new(counted(&drops, i)))
        .collect();
    let mut halves = made.into_iter();
    let first: Vec<_> = halves.by_ref().take(n).collect();
    let second: Vec<_> = halves.collect();
    let workers: Vec<_> = [first, second]
        .into_iter()
        .map(|half| {
            let drops = Arc::clone(&drops);
            std::thread::spawn(move || {
                drop(half);
                let own: Vec<_> = (0..n as u64)
                    .map(|i| BlockBox::new(counted(&drops, 100 + i)))
                    .collect();
                own.iter().map(|b| b.payload[0]).sum::<u64>()
            })
        })
        .collect();
    for w in workers {
        let sum = w.join().expect("the worker ran");
        assert_eq!(sum, (0..n as u64).map(|i| 100 + i).sum::<u64>());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 4 * n);
    // The depot holds what the workers gave back; this thread takes from it when its own
    // magazines run dry.
    let after: Vec<_> = (0..4 * n as u64)
        .map(|i| BlockBox::new(counted(&drops, i)))
        .collect();
    assert_eq!(
        after.iter().map(|b| b.payload[0]).sum::<u64>(),
        (0..4 * n as u64).sum()
    );
    drop(after);
    assert_eq!(drops.load(Ordering::SeqCst), 8 * n);
}

#[test]
fn a_value_dropped_by_a_thread_local_destructor_goes_back_to_the_depot() {
    thread_local! {
        static HELD: std::cell::RefCell<Vec<BlockBox<Counted>>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let in_thread = Arc::clone(&drops);
    std::thread::spawn(move || {
        HELD.with(|h| {
            h.borrow_mut()
                .extend((0..3).map(|i| BlockBox::new(counted(&in_thread, i))))
        });
    })
    .join()
    .expect("the thread ran");
    // Dropped as the thread's locals were destroyed, whichever went first.
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
fn a_shared_value_is_dropped_once_by_its_last_reference_on_any_thread() {
    let drops = Arc::new(AtomicUsize::new(0));
    let first = BlockArc::new(counted(&drops, 11));
    let others: Vec<_> = (0..4).map(|_| first.clone()).collect();
    assert!(others.iter().all(|o| std::ptr::eq(&**o, &*first)));
    let threads: Vec<_> = others
        .into_iter()
        .map(|other| std::thread::spawn(move || other.payload[0]))
        .collect();
    for t in threads {
        assert_eq!(t.join().expect("the thread ran"), 11);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0, "one reference is left");
    let last = first.clone();
    drop(first);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    std::thread::spawn(move || drop(last))
        .join()
        .expect("the thread ran");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// A depot of its own and chunks of its own (not the process's), keeping `keep` spare chunks
/// and any more for no time; every chunk given back at the end.
struct TestDepot {
    depot: super::Depot,
    chunks: Mutex<super::Chunks>,
}

impl TestDepot {
    fn new(keep: usize) -> Self {
        TestDepot {
            depot: super::Depot::new(),
            chunks: Mutex::new(super::Chunks::new(keep, Duration::ZERO, Instant::now)),
        }
    }

    /// `n` blocks of `class` taken, each written to whole (miri sees a block outside its
    /// chunk, or of a chunk given back).
    fn take(&mut self, class: usize, n: usize) -> Vec<NonNull<u8>> {
        let mut blocks = Vec::new();
        while blocks.len() < n {
            let mut magazine = self.depot.refill(class, &self.chunks);
            while blocks.len() < n
                && let Some(block) = magazine.pop()
            {
                // SAFETY: a block taken from the depot is ours to write, all of it.
                unsafe { block.as_ptr().write_bytes(0xAB, super::block_size(class)) };
                blocks.push(block);
            }
            if magazine.len > 0 {
                self.depot.hand_in(class, magazine, &self.chunks);
            }
        }
        blocks
    }

    /// Hands `blocks` of `class` in, a magazine at a time.
    fn give(&mut self, class: usize, blocks: &[NonNull<u8>]) {
        for batch in blocks.chunks(MAGAZINE) {
            let mut magazine = super::Magazine::EMPTY;
            batch.iter().for_each(|&b| magazine.push(b));
            self.depot.hand_in(class, magazine, &self.chunks);
        }
    }

    /// The chunk `block` was carved from.
    fn chunk_of(&self, block: NonNull<u8>) -> *mut u8 {
        super::chunk_of(&self.depot.chunks, block.as_ptr())
    }

    /// The spare chunks, oldest first.
    fn spare(&self) -> Vec<*mut u8> {
        self.chunks.lock().spare.iter().map(|&(c, _)| c).collect()
    }

    fn reserved(&self) -> u64 {
        self.chunks.lock().reserved
    }
}

impl Drop for TestDepot {
    fn drop(&mut self) {
        let spare = std::mem::take(&mut self.chunks.get_mut().spare);
        for chunk in (self.depot.chunks.iter().copied()).chain(spare.into_iter().map(|(c, _)| c)) {
            // SAFETY: every chunk of this test, taken with this layout; the test is done with
            // its blocks.
            unsafe { std::alloc::dealloc(chunk, super::Chunks::layout()) };
        }
    }
}

/// 112-byte blocks: 580 to a chunk.
const CLASS: usize = 6;

#[test]
fn a_chunk_leaves_its_class_once_every_block_carved_from_it_is_free_and_no_other() {
    use super::CHUNK;
    let per_chunk = super::blocks_per_chunk(CLASS) as usize;
    assert_eq!(per_chunk, 580);
    let mut t = TestDepot::new(1);
    // Two chunks' worth of blocks and a magazine of the third's, all taken.
    let mut blocks = t.take(CLASS, 2 * per_chunk + MAGAZINE);
    assert_eq!(t.reserved(), 3 * CHUNK as u64);
    let [first, second, third] = [0, per_chunk, 2 * per_chunk].map(|i| t.chunk_of(blocks[i]));
    assert_eq!(third, t.depot.carving, "the third is being carved");
    // All back but one block of the first chunk and one of the third.
    let kept = [
        blocks.swap_remove(0),
        blocks.pop().expect("one of the third"),
    ];
    t.give(CLASS, &blocks);
    // Only the second had all its blocks free: it is the spare chunk now.
    let mut expected = vec![first, third];
    expected.sort();
    assert_eq!(t.depot.chunks, expected);
    assert_eq!(t.spare(), vec![second]);
    assert_eq!(t.reserved(), 3 * CHUNK as u64);
    assert_eq!(t.depot.idle, blocks.len() - per_chunk);
    assert_eq!(t.depot.partial.len(), 2);
    // The last two back: both chunks go (the one being carved too); beyond the one spare
    // chunk kept, the oldest go back to the allocator.
    t.give(CLASS, &kept);
    assert!(t.depot.chunks.is_empty() && t.depot.partial.is_empty());
    assert_eq!((t.depot.idle, t.depot.carving), (0, std::ptr::null_mut()));
    assert_eq!(t.spare(), vec![third]);
    assert_eq!(t.reserved(), CHUNK as u64);
    // The next blocks are carved from the spare chunk.
    let again = t.take(CLASS, 1);
    assert_eq!(t.depot.chunks, vec![third]);
    assert_eq!(t.reserved(), CHUNK as u64);
    t.give(CLASS, &again);
    assert_eq!(t.spare(), vec![third]);
}

#[test]
fn a_depot_hands_out_the_free_blocks_of_one_chunk_at_a_time_in_address_order() {
    let per_chunk = super::blocks_per_chunk(CLASS) as usize;
    let mut t = TestDepot::new(0);
    let blocks = t.take(CLASS, 2 * per_chunk);
    let [first, second] = [0, per_chunk].map(|i| t.chunk_of(blocks[i]));
    // The fresh ones came in address order.
    assert!(blocks[..per_chunk].is_sorted_by_key(|b| b.addr()));
    // Freed interleaved, from the top down: the chunks' blocks mixed in the magazines. One
    // block of each is kept, so neither chunk leaves.
    let mut freed = Vec::new();
    for i in (1..per_chunk).rev() {
        freed.extend([blocks[i], blocks[per_chunk + i]]);
    }
    t.give(CLASS, &freed);
    assert_eq!(t.depot.idle, 2 * (per_chunk - 1));
    // Taken again: the whole of one chunk's free blocks, lowest first, then the other's.
    let again = t.take(CLASS, 2 * (per_chunk - 1));
    let (one, other) = again.split_at(per_chunk - 1);
    let chunk = t.chunk_of(one[0]);
    assert!(one.iter().all(|&b| t.chunk_of(b) == chunk));
    assert!(other.iter().all(|&b| t.chunk_of(b) != chunk));
    assert!(one.is_sorted_by_key(|b| b.addr()) && other.is_sorted_by_key(|b| b.addr()));
    assert!([first, second].contains(&chunk));
    assert_eq!(t.depot.idle, 0);
    t.give(CLASS, &again);
    t.give(CLASS, &[blocks[0], blocks[per_chunk]]);
    assert!(t.depot.chunks.is_empty());
    assert_eq!(t.reserved(), 0);
}

#[test]
fn a_burst_of_one_size_leaves_its_memory_to_another_size_or_gives_it_back() {
    use super::CHUNK;
    const BIG: usize = 63; // 1 KiB blocks: 63 to a chunk
    let mut t = TestDepot::new(4);
    let big = t.take(BIG, 8 * super::blocks_per_chunk(BIG) as usize);
    assert_eq!(t.reserved(), 8 * CHUNK as u64);
    t.give(BIG, &big);
    // Four chunks kept spare, four given back.
    assert_eq!(t.reserved(), 4 * CHUNK as u64);
    assert_eq!(t.spare().len(), 4);
    // Smaller values take the spare chunks before any new one.
    let small = t.take(CLASS, 3 * super::blocks_per_chunk(CLASS) as usize);
    assert_eq!(t.reserved(), 4 * CHUNK as u64);
    assert_eq!(t.spare().len(), 1);
    t.give(CLASS, &small);
    assert_eq!(t.spare().len(), 4);
    assert_eq!(t.reserved(), 4 * CHUNK as u64);
}

thread_local! {
    /// How far this test thread's clock is past its start.
    static CLOCK: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// A clock only the test moves (a thread's own).
fn test_clock() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now) + CLOCK.get()
}

#[test]
fn a_spare_chunk_beyond_those_always_kept_goes_back_once_it_has_been_spare_for_its_age() {
    use super::CHUNK;
    const AGE: Duration = Duration::from_secs(1);
    let advance = |by| CLOCK.set(CLOCK.get() + by);
    let mut t = TestDepot::new(1);
    *t.chunks.get_mut() = super::Chunks::new(1, AGE, test_clock);
    let per_chunk = super::blocks_per_chunk(CLASS) as usize;
    let blocks = t.take(CLASS, 3 * per_chunk);
    t.give(CLASS, &blocks);
    // All three spare: the one always kept, and two younger than their age.
    assert_eq!(t.spare().len(), 3);
    assert_eq!(t.reserved(), 3 * CHUNK as u64);
    advance(AGE / 2);
    let again = t.take(CLASS, 1);
    assert_eq!(t.spare().len(), 2, "none has been spare for its age yet");
    t.give(CLASS, &again);
    advance(AGE / 2);
    // A chunk taken (the newest spare one): of the two others, the oldest goes back; the
    // other is the one always kept.
    let again = t.take(CLASS, 1);
    assert_eq!(t.spare().len(), 1);
    assert_eq!(t.reserved(), 2 * CHUNK as u64);
    // Given back, young: it is kept, and the older one, spare for its age, goes.
    let older = t.spare();
    t.give(CLASS, &again);
    assert_eq!(t.spare().len(), 1);
    assert_ne!(t.spare(), older);
    assert_eq!(t.reserved(), CHUNK as u64);
}
