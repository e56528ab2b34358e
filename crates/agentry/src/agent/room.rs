//! A value waiting in the memory of the larger value it will become part of: an agent too
//! big to be held inline while its coop is assembled waits in the block its cell takes once
//! it is defined (`agent/cell.rs`, `sync/blocks.rs`), so that registering it takes memory
//! once, not twice (a box for the value, then a block for the cell, and the first freed).
//!
//! # Ground rules
//!
//! - A [`Room<T, C>`] owns exactly one `T`, written at the start of a block made for a
//!   `C`. `C` is at least as large and as aligned as `T` (checked at compile time where a room
//!   is made), so the `T` fits there whatever `C`'s layout puts first.
//! - The `T` is moved out exactly once: by [`Room::take`], which hands back the block,
//!   uninitialised, for the `C` to be written into, or by `Drop`, which drops the `T` and gives
//!   the block back.

use crate::sync::blocks::BlockBox;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};
use std::ptr;

/// A `T` kept in a block made for a `C` (ground rules).
pub(crate) struct Room<T, C> {
    /// Holds a `T` at its start; a `MaybeUninit<C>` drops nothing, [`Drop`] drops the `T`.
    room: BlockBox<MaybeUninit<C>>,
    value: PhantomData<T>,
}

impl<T, C> Room<T, C> {
    /// `value`, moved into a block made for a `C`.
    pub(crate) fn new(value: T) -> Self {
        const {
            assert!(
                size_of::<T>() <= size_of::<C>() && align_of::<T>() <= align_of::<C>(),
                "a room is made for a value that fits it"
            )
        };
        let mut room = BlockBox::<MaybeUninit<C>>::new_uninit();
        // SAFETY: the block is at least as large and as aligned as a `T` (checked above), and
        // holds nothing yet.
        unsafe { room.as_mut_ptr().cast::<T>().write(value) };
        Room {
            room,
            value: PhantomData,
        }
    }

    /// The value, and the block it was in, to be filled with a `C`.
    pub(crate) fn take(self) -> (T, BlockBox<MaybeUninit<C>>) {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the box is moved out once, here.
        let room = unsafe { ptr::read(&this.room) };
        // SAFETY: `new` wrote a `T` at the start of the block, and it is read out once
        // (ground rules): `Drop` will not run.
        let value = unsafe { room.as_ptr().cast::<T>().read() };
        (value, room)
    }
}

impl<T, C> Drop for Room<T, C> {
    fn drop(&mut self) {
        // SAFETY: the room still holds the `T` `new` wrote (`take` does not let `Drop` run);
        // the block is given back afterwards without dropping anything else.
        unsafe { self.room.as_mut_ptr().cast::<T>().drop_in_place() };
    }
}

#[cfg(test)]
mod tests;
