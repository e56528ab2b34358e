//! Run under miri too: `cargo +nightly miri test -p agentry --lib payload`.

use super::{INLINE_BYTES, Lent, Payload, Reject};
use crate::message::Undelivered;
use std::any::TypeId;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, PartialEq)]
struct Signal;

#[test]
fn zero_sized_inline_and_boxed_round_trip() {
    assert_eq!(
        Payload::new(Signal).take::<Signal>().expect("signal"),
        Signal
    );
    assert_eq!(Payload::new(42u64).take::<u64>().expect("u64"), 42);
    let big = [7u8; INLINE_BYTES + 1];
    assert_eq!(
        Payload::new(big)
            .take::<[u8; INLINE_BYTES + 1]>()
            .expect("big"),
        big
    );
    let s = String::from("hello");
    assert_eq!(Payload::new(s).take::<String>().expect("string"), "hello");
    #[repr(align(16))]
    #[derive(Debug, PartialEq)]
    struct OverAligned(u8);
    assert_eq!(
        Payload::new(OverAligned(3))
            .take::<OverAligned>()
            .expect("aligned"),
        OverAligned(3)
    );
}

#[test]
fn wrong_type_gives_the_payload_back() {
    let p = Payload::new(5u32);
    let p = p.take::<u64>().expect_err("must not take a u32 as u64");
    assert_eq!(p.type_name(), "u32");
    assert_eq!(p.take::<u32>().expect("u32"), 5);
}

#[test]
fn every_path_drops_exactly_once() {
    let inline = Arc::new(());
    let boxed = Arc::new(());
    drop(Payload::new(inline.clone()));
    drop(Payload::new((boxed.clone(), [0u64; 8])));
    Payload::new(inline.clone()).reject(Undelivered::NoHandler);
    Payload::new((boxed.clone(), [0u64; 8])).reject(Undelivered::AgentGone);
    assert_eq!(Arc::strong_count(&inline), 1);
    assert_eq!(Arc::strong_count(&boxed), 1);
}

struct Probe(Arc<AtomicUsize>);
impl Reject for Probe {
    fn reject(self, why: Undelivered) {
        assert_eq!(why, Undelivered::Overloaded);
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn rejectable_payload_sees_the_reason() {
    let hits = Arc::new(AtomicUsize::new(0));
    Payload::rejectable(Probe(hits.clone())).reject(Undelivered::Overloaded);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // Plain drop does not call `reject`.
    drop(Payload::rejectable(Probe(hits.clone())));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// Counts how often values of a test type are dropped; `PAD` bytes make it inline or boxed.
struct Tracked<const PAD: usize> {
    drops: Arc<AtomicUsize>,
    pad: [u8; PAD],
}

impl<const PAD: usize> Tracked<PAD> {
    fn new(drops: &Arc<AtomicUsize>) -> Self {
        Tracked {
            drops: drops.clone(),
            pad: [PAD as u8; PAD],
        }
    }
}

impl<const PAD: usize> Drop for Tracked<PAD> {
    fn drop(&mut self) {
        assert!(self.pad.iter().all(|&b| b == PAD as u8), "value torn");
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl<const PAD: usize> Reject for Tracked<PAD> {
    fn reject(self, why: Undelivered) {
        assert_eq!(why, Undelivered::Shutdown);
        // Dropped here: once.
    }
}

/// Runs every way of consuming a payload of `T` and checks that each drops the value once.
fn each_path_drops_once<T: Reject>(make: impl Fn(&Arc<AtomicUsize>) -> T) {
    let drops = Arc::new(AtomicUsize::new(0));
    let dropped = |n: usize, what: &str| assert_eq!(drops.load(Ordering::SeqCst), n, "{what}");
    drop(Payload::new(make(&drops)));
    dropped(1, "drop");
    drop(Payload::new(make(&drops)).take::<T>().ok());
    dropped(2, "take");
    let wrong = Payload::new(make(&drops))
        .take::<u8>()
        .expect_err("not a u8");
    dropped(2, "a wrong take drops nothing");
    drop(wrong);
    dropped(3, "drop after a wrong take");
    Payload::new(make(&drops)).reject(Undelivered::Shutdown);
    dropped(4, "reject of a plain payload");
    Payload::rejectable(make(&drops)).reject(Undelivered::Shutdown);
    dropped(5, "reject of a rejectable payload");
    drop(Payload::rejectable(make(&drops)));
    dropped(6, "drop of a rejectable payload");
    // SAFETY: the payload holds a `T`.
    drop(unsafe { Payload::new(make(&drops)).take_unchecked::<T>() });
    dropped(7, "take_unchecked");
    // Lent (the path of every handled message): taken by the borrower, or left to the slot.
    // SAFETY: the payload holds a `T`.
    Payload::new(make(&drops)).lend(|lent| drop(unsafe { lent.take_unchecked::<T>() }));
    dropped(8, "lent and taken unchecked");
    Payload::new(make(&drops)).lend(|lent| lent.take().reject(Undelivered::Shutdown));
    dropped(9, "lent, taken and rejected");
    Payload::new(make(&drops)).lend(|lent| assert_eq!(lent.type_id(), TypeId::of::<T>()));
    dropped(10, "lent and left to the slot");
}

#[test]
fn inline_and_boxed_values_are_dropped_exactly_once_on_every_path() {
    // An `Arc` is one word: `PAD` up to `INLINE_BYTES - 8` stays inline.
    each_path_drops_once(Tracked::<0>::new);
    each_path_drops_once(Tracked::<{ INLINE_BYTES - 8 }>::new);
    each_path_drops_once(Tracked::<{ INLINE_BYTES - 7 }>::new);
    each_path_drops_once(Tracked::<64>::new);
}

#[derive(Debug, PartialEq)]
#[repr(align(32))]
struct Aligned32(u64);

#[derive(Debug, PartialEq)]
#[repr(align(4096))]
struct Page(u8);

#[test]
fn over_aligned_and_odd_sized_values_keep_their_bytes() {
    // Over-aligned values are boxed even when small; the box keeps their alignment.
    let p = Payload::new(Aligned32(0xfeed));
    assert_eq!(p.take::<Aligned32>().expect("aligned32"), Aligned32(0xfeed));
    let p = Payload::new(Page(9));
    assert_eq!(p.take::<Page>().expect("page"), Page(9));
    // u128 has 16-byte alignment on x86_64 (boxed there), 8 elsewhere.
    assert_eq!(
        Payload::new(u128::MAX - 1).take::<u128>().expect("u128"),
        u128::MAX - 1
    );
    // Smaller than a word, and exactly the inline capacity.
    assert_eq!(Payload::new(3u8).take::<u8>().expect("u8"), 3);
    assert_eq!(
        Payload::new((1u8, 2u16)).take::<(u8, u16)>().expect("pair"),
        (1, 2)
    );
    let full = [0xabu8; INLINE_BYTES];
    assert_eq!(
        Payload::new(full)
            .take::<[u8; INLINE_BYTES]>()
            .expect("full"),
        full
    );
    // Zero-sized values of any alignment.
    #[derive(Debug, PartialEq)]
    #[repr(align(64))]
    struct AlignedZst;
    assert_eq!(Payload::new(()).take::<()>().expect("unit"), ());
    assert_eq!(
        Payload::new(AlignedZst).take::<AlignedZst>().expect("zst"),
        AlignedZst
    );
    // Padding bytes (uninitialised) are carried without being read as integers.
    #[derive(Debug, PartialEq, Clone, Copy)]
    struct Padded {
        a: u8,
        b: u64,
        c: u16,
    }
    let v = Padded { a: 1, b: 2, c: 3 };
    assert_eq!(Payload::new(v).take::<Padded>().expect("padded"), v);
}

#[test]
fn zero_sized_values_with_drop_run_drop_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Zst;
    impl Drop for Zst {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    drop(Payload::new(Zst));
    Payload::new(Zst).reject(Undelivered::NoHandler);
    drop(Payload::new(Zst).take::<Zst>().ok());
    assert_eq!(DROPS.load(Ordering::SeqCst), 3);
}

#[test]
fn values_survive_moves_of_the_payload_and_a_trip_to_another_thread() {
    // Pointers kept inline (a `Box`, a `&'static`) and a boxed value's pointer must keep
    // their provenance through byte copies of the payload.
    let inline = Payload::new(Box::new(41u32));
    let borrowed = Payload::new("static str");
    let boxed = Payload::new(vec![String::from("a"), String::from("b")]);
    let mut moved: Vec<Payload> = vec![inline, borrowed, boxed];
    moved.reverse();
    moved.shrink_to_fit();
    let moved = std::thread::spawn(move || {
        let mut moved = moved;
        moved.insert(0, Payload::new(std::cell::Cell::new(5u64)));
        moved
    })
    .join()
    .expect("thread");
    let mut it = moved.into_iter();
    let cell = it
        .next()
        .expect("cell")
        .take::<std::cell::Cell<u64>>()
        .expect("cell");
    cell.set(cell.get() + 1);
    assert_eq!(cell.get(), 6);
    let v = it.next().expect("vec").take::<Vec<String>>().expect("vec");
    assert_eq!(v, ["a", "b"]);
    assert_eq!(
        it.next().expect("str").take::<&str>().expect("str"),
        "static str"
    );
    let b = it.next().expect("box").take::<Box<u32>>().expect("box");
    assert_eq!(*b + 1, 42);
}

#[test]
fn a_lent_payload_taken_empties_its_slot_and_one_left_stays() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut slot = Some(Payload::new(Tracked::<0>::new(&drops)));
    let lent = Lent::of(&mut slot).expect("the slot holds a payload");
    assert_eq!(lent.type_name(), std::any::type_name::<Tracked<0>>());
    // SAFETY: the slot holds a `Tracked<0>`.
    let value = unsafe { lent.take_unchecked::<Tracked<0>>() };
    assert!(slot.is_none(), "taking empties the slot");
    assert!(Lent::of(&mut slot).is_none(), "an empty slot lends nothing");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(value);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let mut slot = Some(Payload::new(5_u32));
    let lent = Lent::of(&mut slot).expect("the slot holds a payload");
    assert_eq!(lent.type_id(), TypeId::of::<u32>());
    assert_eq!(
        slot.and_then(|p| p.take::<u32>().ok()),
        Some(5),
        "not taken: still in the slot"
    );
}
