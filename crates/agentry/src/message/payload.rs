//! Type-erased message storage for demands: small messages inline, larger ones boxed.
//!
//! # Ground rules
//!
//! - A [`Payload`] owns exactly one value; its vtable records the value's `TypeId` and how to
//!   drop or reject it.
//! - A value whose size is at most [`INLINE_BYTES`] and whose alignment is at most that of
//!   `usize` lives inside the payload (no allocation: signals, ids, small structs); any other
//!   value lives in a `Box` whose pointer is stored in the first word.
//! - The value is moved out exactly once: by [`Payload::take`] / [`Payload::take_unchecked`],
//!   by [`Payload::reject`], or by `Drop`. Each path wraps `self` in `ManuallyDrop` first.
//! - A payload is handed to an agent and on to its handler *by reference* ([`Lent`]): a
//!   32-byte payload passed by value through the two virtual calls (the agent's body, the
//!   handler) was copied through the stack at each. A [`Lent`] is a borrow of the slot that
//!   holds the payload (the demand's): whoever takes the value leaves the slot empty, and the
//!   slot's owner drops whatever was not taken — so the value is still moved out exactly once.

use super::Undelivered;
use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};
use std::ptr;

const INLINE_WORDS: usize = 3;
/// Largest message (in bytes) stored without an allocation.
pub(crate) const INLINE_BYTES: usize = INLINE_WORDS * size_of::<usize>();

type Storage = [MaybeUninit<usize>; INLINE_WORDS];

/// A message that can answer its sender when it is not handled (request envelopes).
pub(crate) trait Reject: Send + 'static {
    /// Consumes the message, telling whoever waits for it why it was not handled.
    fn reject(self, why: Undelivered);
}

struct VTable {
    type_id: TypeId,
    type_name: fn() -> &'static str,
    drop_value: unsafe fn(*mut Storage),
    reject_value: unsafe fn(*mut Storage, Undelivered),
}

struct VTableOf<M>(PhantomData<M>);

impl<M: Send + 'static> VTableOf<M> {
    const PLAIN: VTable = VTable {
        type_id: TypeId::of::<M>(),
        type_name: std::any::type_name::<M>,
        drop_value: drop_value::<M>,
        reject_value: reject_by_dropping::<M>,
    };
}

impl<M: Reject> VTableOf<M> {
    const REJECTING: VTable = VTable {
        type_id: TypeId::of::<M>(),
        type_name: std::any::type_name::<M>,
        drop_value: drop_value::<M>,
        reject_value: reject_value::<M>,
    };
}

/// True if a value of type `M` is kept inside a payload (no allocation).
pub(crate) const fn is_inline<M>() -> bool {
    size_of::<M>() <= INLINE_BYTES && align_of::<M>() <= align_of::<usize>()
}

/// # Safety
/// `data` holds a live `M` written by [`Payload::with_vtable`]; it is consumed.
unsafe fn read_value<M>(data: *const Storage) -> M {
    if is_inline::<M>() {
        // SAFETY: inline values are written at offset 0 with sufficient alignment.
        unsafe { ptr::read(data.cast::<M>()) }
    } else {
        // SAFETY: boxed values store the `Box::into_raw` pointer in the first word.
        unsafe { *Box::from_raw(ptr::read(data.cast::<*mut M>())) }
    }
}

/// # Safety
/// As [`read_value`].
unsafe fn drop_value<M>(data: *mut Storage) {
    // SAFETY: forwarded contract.
    drop(unsafe { read_value::<M>(data) });
}

/// # Safety
/// As [`read_value`].
unsafe fn reject_by_dropping<M>(data: *mut Storage, _why: Undelivered) {
    // SAFETY: forwarded contract.
    drop(unsafe { read_value::<M>(data) });
}

/// # Safety
/// As [`read_value`].
unsafe fn reject_value<M: Reject>(data: *mut Storage, why: Undelivered) {
    // SAFETY: forwarded contract.
    unsafe { read_value::<M>(data) }.reject(why);
}

/// One type-erased message.
pub(crate) struct Payload {
    vtable: &'static VTable,
    data: Storage,
}

// SAFETY: every constructor requires the stored value to be `Send`.
unsafe impl Send for Payload {}

impl Payload {
    /// Wraps an ordinary message.
    #[inline]
    pub(crate) fn new<M: Send + 'static>(message: M) -> Self {
        Self::with_vtable(message, &VTableOf::<M>::PLAIN)
    }

    /// Wraps a message that answers its sender when rejected.
    pub(crate) fn rejectable<M: Reject>(message: M) -> Self {
        Self::with_vtable(message, &VTableOf::<M>::REJECTING)
    }

    #[inline]
    fn with_vtable<M>(message: M, vtable: &'static VTable) -> Self {
        let mut data: Storage = [MaybeUninit::uninit(); INLINE_WORDS];
        if is_inline::<M>() {
            // SAFETY: `M` fits in `data` and needs no more alignment than `usize`.
            unsafe { ptr::write(data.as_mut_ptr().cast::<M>(), message) };
        } else {
            let boxed = Box::into_raw(Box::new(message));
            // SAFETY: a pointer fits in the first word.
            unsafe { ptr::write(data.as_mut_ptr().cast::<*mut M>(), boxed) };
        }
        Payload { vtable, data }
    }

    /// The `TypeId` of the stored message.
    #[inline]
    pub(crate) fn type_id(&self) -> TypeId {
        self.vtable.type_id
    }

    /// The Rust type name of the stored message (diagnostics only).
    pub(crate) fn type_name(&self) -> &'static str {
        (self.vtable.type_name)()
    }

    /// Moves the message out if it is an `M`; gives the payload back otherwise.
    pub(crate) fn take<M: 'static>(self) -> Result<M, Payload> {
        if self.type_id() == TypeId::of::<M>() {
            // SAFETY: the type was just checked.
            Ok(unsafe { self.take_unchecked() })
        } else {
            Err(self)
        }
    }

    /// Moves the message out without checking its type.
    ///
    /// # Safety
    ///
    /// The payload must hold an `M` (`self.type_id() == TypeId::of::<M>()`).
    #[inline]
    pub(crate) unsafe fn take_unchecked<M: 'static>(self) -> M {
        debug_assert_eq!(self.type_id(), TypeId::of::<M>());
        let this = ManuallyDrop::new(self);
        // SAFETY: caller guarantees the type; `ManuallyDrop` prevents a second drop.
        unsafe { read_value::<M>(&this.data) }
    }

    /// Consumes the message as undelivered: request envelopes answer their requester with
    /// `why`; any other message is simply dropped.
    pub(crate) fn reject(self, why: Undelivered) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: the vtable matches the stored value; `ManuallyDrop` prevents a second drop.
        unsafe { (this.vtable.reject_value)(&mut this.data, why) };
    }
}

impl Drop for Payload {
    fn drop(&mut self) {
        // SAFETY: the value is still owned (every consuming path uses `ManuallyDrop`).
        unsafe { (self.vtable.drop_value)(&mut self.data) };
    }
}

/// A payload lent by the slot that holds it (module docs): the borrower may take the value
/// (or the whole payload) out, which empties the slot; whatever it does not take stays with
/// the slot's owner.
pub(crate) struct Lent<'a>(&'a mut Option<Payload>);

impl<'a> Lent<'a> {
    /// The payload in `slot`; `None` if the slot is empty.
    #[inline(always)]
    pub(crate) fn of(slot: &'a mut Option<Payload>) -> Option<Self> {
        slot.is_some().then_some(Lent(slot))
    }

    #[inline(always)]
    fn payload(&self) -> &Payload {
        match &self.0 {
            Some(payload) => payload,
            None => unreachable!("invariant: a lent slot holds a payload until it is taken"),
        }
    }

    /// The `TypeId` of the lent message.
    #[inline(always)]
    pub(crate) fn type_id(&self) -> TypeId {
        self.payload().type_id()
    }

    /// The Rust type name of the lent message (diagnostics only).
    pub(crate) fn type_name(&self) -> &'static str {
        self.payload().type_name()
    }

    /// Takes the whole payload out of the slot.
    #[inline(always)]
    pub(crate) fn take(self) -> Payload {
        match self.0.take() {
            Some(payload) => payload,
            None => unreachable!("invariant: a lent slot holds a payload until it is taken"),
        }
    }

    /// Moves the message out of the slot without checking its type.
    ///
    /// # Safety
    ///
    /// As [`Payload::take_unchecked`]: the slot must hold an `M`.
    #[inline(always)]
    pub(crate) unsafe fn take_unchecked<M: 'static>(self) -> M {
        // SAFETY: forwarded contract.
        unsafe { self.take().take_unchecked::<M>() }
    }
}

impl Payload {
    /// Lends the payload to `f` (which may take it) and drops it afterwards if `f` did not.
    #[inline(always)]
    pub(crate) fn lend<R>(self, f: impl FnOnce(Lent<'_>) -> R) -> R {
        let mut slot = Some(self);
        f(Lent(&mut slot))
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payload")
            .field("type", &self.type_name())
            .finish()
    }
}

#[cfg(test)]
mod tests;
