use super::*;
use proptest::prelude::*;

fn id(s: &str) -> Arc<str> {
    s.into()
}

#[test]
fn a_redelivery_is_delivered_once_and_acked_through_the_newest_subject() {
    let mut l = Ledger::new(10);
    assert_eq!(l.arrive(&id("a"), 1), Arrival::Deliver);
    // Redelivered while the agent still has it: not delivered again.
    assert_eq!(l.arrive(&id("a"), 2), Arrival::InFlight);
    assert_eq!(l.finish(&id("a"), true), Some(2));
    // Redelivered after a lost ack: acknowledged again, not delivered.
    assert_eq!(l.arrive(&id("a"), 3), Arrival::Handled(3));
    assert_eq!(l.finish(&id("a"), true), None);
    assert_eq!(l.in_flight(), 0);
}

#[test]
fn a_refused_message_is_delivered_again() {
    let mut l = Ledger::new(10);
    assert_eq!(l.arrive(&id("a"), 1), Arrival::Deliver);
    assert_eq!(l.finish(&id("a"), false), Some(1));
    assert_eq!(l.arrive(&id("a"), 2), Arrival::Deliver);
}

#[test]
fn handled_ids_are_forgotten_first_in_first_out() {
    let mut l = Ledger::new(2);
    for k in ["a", "b", "c"] {
        assert_eq!(l.arrive(&id(k), 0), Arrival::Deliver);
        assert_eq!(l.finish(&id(k), true), Some(0));
    }
    assert_eq!(
        l.arrive(&id("a"), 1),
        Arrival::Deliver,
        "beyond the capacity"
    );
    assert_eq!(l.arrive(&id("b"), 1), Arrival::Handled(1));
    assert_eq!(l.arrive(&id("c"), 1), Arrival::Handled(1));
}

proptest! {
    /// Against a model: while an id is remembered it is delivered at most once per
    /// successful handling, and the ledger never holds more than `capacity` handled ids.
    #[test]
    fn matches_a_model(ops in proptest::collection::vec((0u8..6, any::<bool>(), any::<bool>()), 0..200)) {
        let cap = 4;
        let mut l = Ledger::new(cap);
        let mut in_flight = std::collections::HashSet::new();
        let mut handled: VecDeque<u8> = VecDeque::new();
        for (k, arrive, ok) in ops {
            let key = id(&k.to_string());
            if arrive {
                let got = l.arrive(&key, ());
                let want = if in_flight.contains(&k) {
                    Arrival::InFlight
                } else if handled.contains(&k) {
                    Arrival::Handled(())
                } else {
                    in_flight.insert(k);
                    Arrival::Deliver
                };
                prop_assert_eq!(got, want);
            } else {
                let got = l.finish(&key, ok);
                prop_assert_eq!(got.is_some(), in_flight.remove(&k));
                if got.is_some() && ok {
                    handled.push_back(k);
                    if handled.len() > cap {
                        handled.pop_front();
                    }
                }
            }
            prop_assert!(l.handled.len() <= cap);
            prop_assert_eq!(l.in_flight(), in_flight.len());
        }
    }
}
