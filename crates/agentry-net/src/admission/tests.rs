//! The connection limit: never past its maximum, every slot given back once.

use super::ConnLimit;

#[test]
fn slots_stop_at_the_maximum_and_come_back_on_drop() {
    let limit = ConnLimit::new(2);
    let first = limit.try_take().expect("a first slot under a limit of 2");
    let second = limit.try_take().expect("a second slot under a limit of 2");
    assert!(limit.try_take().is_none(), "a third slot passed the limit");
    assert_eq!(limit.open(), 2);
    drop(first);
    assert_eq!(limit.open(), 1);
    let third = limit.try_take().expect("the slot given back is free again");
    drop((second, third));
    assert_eq!(limit.open(), 0);
}
