//! Run under miri too: `cargo +nightly miri test -p agentry --lib payload`.

use super::{INLINE_BYTES, Payload, Reject};
use crate::message::Undelivered;
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
