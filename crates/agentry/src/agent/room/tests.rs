//! The room's value is moved out or dropped exactly once, wherever it sits in the room.

use super::Room;
use std::cell::Cell;
use std::rc::Rc;

/// Counts its drops.
struct Counted(Rc<Cell<u32>>, [u64; 3]);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// Larger and more aligned than what waits in it.
#[repr(align(32))]
struct Bigger {
    _words: [u64; 8],
}

#[test]
fn a_taken_value_comes_back_whole_and_is_dropped_by_its_taker_only() {
    let drops = Rc::new(Cell::new(0));
    let room = Room::<Counted, Bigger>::new(Counted(Rc::clone(&drops), [1, 2, 3]));
    let (value, place) = room.take();
    assert_eq!(value.1, [1, 2, 3]);
    assert_eq!(
        drops.get(),
        0,
        "taking moves the value out, it drops nothing"
    );
    let filled = place.write(Bigger { _words: [7; 8] });
    assert_eq!(
        std::ptr::from_ref(&*filled).addr() % 32,
        0,
        "the room kept its alignment"
    );
    drop(filled);
    drop(value);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_room_dropped_unused_drops_its_value_once() {
    let drops = Rc::new(Cell::new(0));
    drop(Room::<Counted, Bigger>::new(Counted(
        Rc::clone(&drops),
        [0; 3],
    )));
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_value_as_large_as_its_room_and_a_zero_sized_one_fit() {
    let (value, _) = Room::<[u64; 4], [u64; 4]>::new([9, 8, 7, 6]).take();
    assert_eq!(value, [9, 8, 7, 6]);
    let ((), _) = Room::<(), Bigger>::new(()).take();
}
