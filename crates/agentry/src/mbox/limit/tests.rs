use super::*;

struct Limited;
struct Free;

fn slot(acquired: Acquire<'_>) -> LimitSlot {
    match acquired {
        Acquire::Slot(slot) => slot,
        Acquire::Unlimited => panic!("a tracked queue gives every message a place"),
        Acquire::Exceeded(_) => panic!("over the limit"),
    }
}

#[test]
fn depth_counts_places_taken_less_those_given_back_by_the_worker_or_elsewhere() {
    let table = LimitTable::new(vec![LimitEntry::new(2, Overload::<Limited>::Drop)], true);
    assert_eq!(table.depth(), Some(0));
    let free = [0, 1, 2].map(|_| slot(table.acquire::<Free>()));
    let limited = slot(table.acquire::<Limited>());
    assert_eq!(table.depth(), Some(4));
    table.release_taken(free[0]); // handled by the worker
    table.release(free[1]); // dropped elsewhere
    assert_eq!(table.depth(), Some(2));
    table.release_taken(limited);
    table.release(free[2]);
    assert_eq!(table.depth(), Some(0));
    // The limit's own count went back too: two more fit, a third does not.
    let _ = [
        slot(table.acquire::<Limited>()),
        slot(table.acquire::<Limited>()),
    ];
    assert!(matches!(table.acquire::<Limited>(), Acquire::Exceeded(_)));
    assert_eq!(table.depth(), Some(2), "a refused message takes no place");
}

#[test]
fn without_tracking_there_is_no_depth_and_free_types_take_no_place() {
    let table = LimitTable::new(vec![LimitEntry::new(1, Overload::<Limited>::Drop)], false);
    assert_eq!(table.depth(), None);
    assert!(matches!(table.acquire::<Free>(), Acquire::Unlimited));
    assert!(LimitTable::new(Vec::new(), false).is_empty());
}
