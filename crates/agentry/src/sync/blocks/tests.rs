//! The block store (run under miri by `scripts/test.sh`: a block freed twice, a value dropped
//! twice or read after its memory went back, or a leak, fails these).

use super::{BlockArc, BlockBox, MAGAZINE, MAX_BLOCK, STEP};
use std::any::Any;
use std::collections::HashSet;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A depot of its own (not the process's), its chunks given back at the end.
struct TestDepot(super::Depot);

impl Drop for TestDepot {
    fn drop(&mut self) {
        for &chunk in &self.0.chunks {
            // SAFETY: every chunk of this depot, taken with this layout; the test is done with
            // its blocks.
            unsafe { std::alloc::dealloc(chunk, super::Depot::chunk_layout()) };
        }
    }
}

/// The blocks of `magazines`, each written to (miri sees a block of a chunk given back).
fn listed(magazines: &[super::Magazine]) -> Vec<*mut u8> {
    magazines
        .iter()
        .flat_map(super::Magazine::blocks)
        .inspect(|block| {
            // SAFETY: a free block of a live chunk: its bytes past the link are nobody's.
            unsafe { block.add(8).write(0xAB) };
        })
        .collect()
}

#[test]
fn a_chunk_whose_blocks_are_all_free_goes_back_and_no_other() {
    use super::{CHUNK, Magazine, chunk_of};
    const CLASS: usize = 6; // 112-byte blocks: 585 to a chunk
    let mut depot = TestDepot(super::Depot::new());
    let d = &mut depot.0;
    d.trim_at = u64::MAX; // trimmed by hand below
    // Three chunks' worth of blocks, all taken.
    let mut blocks = Vec::new();
    while d.chunks.len() < 3 {
        let mut magazine = d.refill(CLASS);
        while let Some(block) = magazine.pop() {
            blocks.push(block);
        }
    }
    assert_eq!(d.reserved, 3 * CHUNK as u64);
    // In the order they were taken (the depot sorts them by address).
    let mut taken: Vec<_> = blocks
        .iter()
        .map(|b| chunk_of(&d.chunks, b.as_ptr()))
        .collect();
    taken.dedup();
    let [first, second, third] = [taken[0], taken[1], taken[2]];
    assert_eq!(third, d.current, "the third is being carved");
    // All back but one block of the first chunk and one of the third.
    let mut keep = |chunk| {
        let at = blocks
            .iter()
            .position(|b| chunk_of(&d.chunks, b.as_ptr()) == chunk)
            .expect("a block of the chunk");
        blocks.swap_remove(at)
    };
    let kept = [keep(first), keep(third)];
    let give_back = |d: &mut super::Depot, blocks: &[NonNull<u8>]| {
        for batch in blocks.chunks(MAGAZINE) {
            let mut magazine = Magazine::EMPTY;
            batch.iter().for_each(|&b| magazine.push(b));
            d.hand_in(CLASS, magazine);
        }
    };
    give_back(d, &blocks);
    d.trim();
    d.trim_at = u64::MAX;
    // Only the second chunk had all its blocks free.
    let mut expected = vec![first, third];
    expected.sort();
    assert_eq!(d.chunks, expected);
    assert_eq!(d.reserved, 2 * CHUNK as u64);
    let left = listed(&d.magazines[CLASS]);
    assert!(left.iter().all(|&b| chunk_of(&d.chunks, b) != second));
    assert_eq!(d.idle, (left.len() * 112) as u64);
    assert_eq!(left.len(), blocks.len() - 585);
    // The last two blocks back: both chunks go, the one being carved too.
    give_back(d, &kept);
    d.trim();
    assert!(d.chunks.is_empty());
    assert_eq!((d.reserved, d.idle), (0, 0));
    assert!(d.magazines[CLASS].is_empty());
    // The next block comes from a new chunk.
    let again = d.refill(CLASS);
    assert_eq!(again.len, MAGAZINE);
    assert_eq!(d.chunks.len(), 1);
    d.hand_in(CLASS, again);
}

#[test]
fn a_new_chunk_is_taken_only_after_free_chunks_of_other_sizes_went_back() {
    use super::{CHUNK, Magazine, TRIM_MIN};
    const BIG: usize = 63; // 1 KiB blocks
    const SMALL: usize = 6; // 112-byte blocks
    let mut depot = TestDepot(super::Depot::new());
    let d = &mut depot.0;
    // A burst of large values, more than the trim's floor, all given back: nothing is given
    // back to the allocator while nobody takes more.
    let mut blocks = Vec::new();
    while (blocks.len() * 1024) as u64 <= 2 * TRIM_MIN {
        let mut magazine = d.refill(BIG);
        while let Some(block) = magazine.pop() {
            blocks.push(block);
        }
    }
    let most = d.reserved;
    for batch in blocks.chunks(MAGAZINE) {
        let mut magazine = Magazine::EMPTY;
        batch.iter().for_each(|&b| magazine.push(b));
        d.hand_in(BIG, magazine);
    }
    assert_eq!(d.reserved, most);
    // Small values then need a chunk of their own: the large ones' chunks go back first.
    let mut small = Vec::new();
    while small.len() < 2 * (CHUNK / 112) {
        let mut magazine = d.refill(SMALL);
        while let Some(block) = magazine.pop() {
            // SAFETY: a block taken from the depot is ours to write.
            unsafe { block.as_ptr().cast::<[u8; 112]>().write([7; 112]) };
            small.push(block);
        }
    }
    assert!(
        d.reserved <= 4 * CHUNK as u64 && d.reserved < most / 2,
        "trimmed from {most} to {} bytes",
        d.reserved
    );
    // All but those of the chunk the small values were first carved from, with them.
    assert!(d.idle <= CHUNK as u64, "{} bytes left free", d.idle);
    for batch in small.chunks(MAGAZINE) {
        let mut magazine = Magazine::EMPTY;
        batch.iter().for_each(|&b| magazine.push(b));
        d.hand_in(SMALL, magazine);
    }
    listed(&d.magazines[SMALL]);
}
