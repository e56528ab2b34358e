//! Handler closures shared by every agent of one type: kept once per type instead of once per
//! agent, when they carry nothing per agent.
//!
//! # Why
//!
//! Most handlers are closures that capture nothing, or plain functions (`def.on(Self::on_ping)`):
//! zero-sized values. Boxing one allocates nothing, but an agent with several handlers keeps
//! their boxes in a slice of its own: one allocation of 16 bytes a handler per agent (48 bytes
//! of heap for two), all identical from one agent of the type to the next. Such handlers are
//! *shareable*. The first agent of a type whose definition declares its type's cached layout
//! (`agent/layout.rs`) with two or more handlers, all shareable, gives them to its type's class
//! (`mbox/class.rs`), and every later agent whose definition declares the same layout with
//! handlers of the same types uses that set: it keeps one reference, and neither its
//! definition nor its cell allocates anything for its handlers.
//!
//! # Ground rules
//!
//! - A handler is shareable when its closure type is zero-sized and has no drop glue (checked
//!   when it is declared, [`NewHandler::typed`]).
//! - As a definition declares handlers of the set's types in the set's order, their values are
//!   *folded* ([`Folded`]): forgotten, kept in no bytes, as a `Vec` keeps zero-sized elements.
//!   If the agent ends up not using the set (a handler of another type, fewer handlers, another
//!   layout), the folded values are read back, once each ([`Folded::revive`]), and become its
//!   own handlers as if never folded. A folded value never read back is never dropped: it has
//!   no drop glue, so that is the same.
//! - An agent uses the set only if its definition declared its type's cached layout (so that
//!   index `i` names the same pair and states as for the agent that published the set) and its
//!   handlers were all folded, as many as the set has. A call through the set is then a call of
//!   the same function on a value of the same zero-sized type as its own.
//! - A class decides once: the first agent that declares the cached layout publishes its
//!   handlers, or that the type shares none (a handler that captures something, or one handler
//!   only — a single handler is kept inline, sharing would save nothing). Later agents never
//!   ask again: nothing is tracked per agent for a type that does not share.

use super::{ErasedHandler, TypedHandler};
use crate::agent::Ctx;
use crate::mbox::class::AgentClass;
use std::any::{Any, TypeId};
use std::sync::Arc;

/// What a shareable handler is: its type, and how a folded value of it is read back.
pub(crate) struct Kind<A: 'static> {
    /// The type id of its `TypedHandler<M, F>` (message and closure).
    id: TypeId,
    /// Reads a folded value back (`revive::<A, M, F>`).
    revive: unsafe fn() -> Box<dyn ErasedHandler<A>>,
}

// Not derived: a derive would ask `A: Copy`.
impl<A> Clone for Kind<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Kind<A> {}

/// A handler as a definition declares it: erased, with its kind when it is shareable.
pub(crate) struct NewHandler<A: 'static> {
    pub(super) handler: Box<dyn ErasedHandler<A>>,
    /// Present if its closure is zero-sized without drop glue.
    pub(super) shareable: Option<Kind<A>>,
}

impl<A: 'static> NewHandler<A> {
    /// The handler `f` for messages `M`.
    pub(crate) fn typed<M, F>(f: F) -> Self
    where
        M: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
    {
        let shareable = (size_of::<F>() == 0 && !std::mem::needs_drop::<F>()).then(|| Kind {
            id: TypeId::of::<TypedHandler<M, F>>(),
            revive: revive::<A, M, F>,
        });
        NewHandler {
            handler: Box::new(TypedHandler::<M, F>::new(f)),
            shareable,
        }
    }
}

/// Reads back a folded value of the closure `F` ([`Folded`]) as its handler.
///
/// # Safety
///
/// `F` is zero-sized (only [`NewHandler::typed`] names this function, for such an `F`), and the
/// caller reads back a value of `F` that it folded, once.
unsafe fn revive<A, M, F>() -> Box<dyn ErasedHandler<A>>
where
    M: Send + 'static,
    F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
{
    debug_assert_eq!(size_of::<F>(), 0);
    // SAFETY: reading a zero-sized value touches no bytes, so any aligned non-null pointer
    // serves — how `Vec` reads back its zero-sized elements; the caller forgot the value this
    // read gives back (the function's contract).
    let f = unsafe { std::ptr::NonNull::<F>::dangling().as_ptr().read() };
    Box::new(TypedHandler::<M, F>::new(f))
}

/// One handler of a shared set, and its kind.
pub(crate) struct SharedHandler<A: 'static> {
    pub(super) handler: Box<dyn ErasedHandler<A>>,
    kind: Kind<A>,
}

// SAFETY: a `SharedHandler` is made only by `publish`, from a shareable handler
// (`NewHandler::typed`): a `TypedHandler<M, F>` whose `F` is zero-sized and has no drop glue.
// Sharing it gives other threads a `&TypedHandler<M, F>`, a reference to no bytes: no call can
// read or write anything through it, and dropping it on any thread does nothing. Each agent
// that calls it folded a value of the same type `F` in its own definition (ground rules), so a
// call through the set stands for a call of that agent's own value, made on the agent's
// thread as it would be without sharing (`F: Send`). What `Sync` guards — memory reached
// through a shared reference — there is none of.
unsafe impl<A> Send for SharedHandler<A> {}
// SAFETY: as for `Send` above.
unsafe impl<A> Sync for SharedHandler<A> {}

/// A class's shared set, as its class keeps it (type-erased there: the mboxes do not name
/// agents).
struct SharedHandlers<A: 'static>(Arc<[SharedHandler<A>]>);

/// What a class decided about sharing its agents' handlers.
pub(crate) enum Sharing<A: 'static> {
    /// Nothing yet: the next agent that declares the cached layout decides.
    Undecided,
    /// The type shares none.
    Never,
    /// The set that every agent declaring the cached layout with handlers of its kinds uses.
    Set(Arc<[SharedHandler<A>]>),
}

impl<A: 'static> Sharing<A> {
    /// What `class` (the class of `A`) decided.
    pub(crate) fn of(class: &AgentClass) -> Self {
        match class.handlers.get() {
            None => Sharing::Undecided,
            Some(None) => Sharing::Never,
            Some(Some(set)) => Sharing::Set(Arc::clone(
                &set.downcast_ref::<SharedHandlers<A>>()
                    .unwrap_or_else(|| unreachable!("invariant: a class shares its own type's"))
                    .0,
            )),
        }
    }
}

/// The handlers a definition declared so far, when they are its type's shared set's first
/// `n`, kind for kind: their values folded (see the ground rules).
pub(crate) struct Folded<A: 'static> {
    set: Arc<[SharedHandler<A>]>,
    n: usize,
}

impl<A: 'static> Folded<A> {
    /// Folds `first`, a definition's first handler, if it is of the kind of `set`'s first;
    /// else gives it back.
    pub(super) fn start(
        set: Arc<[SharedHandler<A>]>,
        first: NewHandler<A>,
    ) -> Result<Self, NewHandler<A>> {
        let mut folded = Folded { set, n: 0 };
        folded.push(first)?;
        Ok(folded)
    }

    /// How many handlers are folded.
    pub(super) fn len(&self) -> usize {
        self.n
    }

    /// Folds `next` if it is of the kind of the set's next handler; else gives it back.
    pub(super) fn push(&mut self, next: NewHandler<A>) -> Result<(), NewHandler<A>> {
        match (next.shareable, self.set.get(self.n)) {
            (Some(kind), Some(shared)) if kind.id == shared.kind.id => {
                // Kept in no bytes (ground rules); `revive` reads it back if it is needed.
                std::mem::forget(next.handler);
                self.n += 1;
                Ok(())
            }
            _ => Err(next),
        }
    }

    /// The set, if every one of its handlers was folded; else the folded ones, as they were.
    pub(super) fn complete(self) -> Result<Arc<[SharedHandler<A>]>, Self> {
        if self.n == self.set.len() {
            Ok(self.set)
        } else {
            Err(self)
        }
    }

    /// The folded handlers, read back in their order: the agent's own.
    pub(super) fn revive(self) -> impl Iterator<Item = Box<dyn ErasedHandler<A>>> {
        let Folded { set, n } = self;
        (0..n).map(move |i| {
            // SAFETY: `push` folded a value of the kind of the set's `i`-th handler (an `F`
            // that `NewHandler::typed` checked is zero-sized), and `self` is consumed here,
            // so each is read back once.
            unsafe { (set[i].kind.revive)() }
        })
    }
}

/// True if `handlers`, as the first agent that declared its type's cached layout declared
/// them, are to be its type's shared set: each shareable, and 2 or more (or one, if `one`).
pub(super) fn worth_sharing<A: 'static>(handlers: &[NewHandler<A>], one: bool) -> bool {
    handlers.len() >= if one { 1 } else { 2 } && handlers.iter().all(|h| h.shareable.is_some())
}

/// Makes `handlers` (each shareable: [`worth_sharing`]) `class`'s shared set; the agent that
/// declared them uses it too. If another agent decided first, its decision stands; the set
/// made here is still this agent's to use.
pub(super) fn publish<A: 'static>(
    class: &AgentClass,
    handlers: Vec<NewHandler<A>>,
) -> Arc<[SharedHandler<A>]> {
    let set: Arc<[SharedHandler<A>]> = handlers
        .into_iter()
        .map(|h| SharedHandler {
            kind: h
                .shareable
                .expect("invariant: only shareable handlers are published"),
            handler: h.handler,
        })
        .collect();
    let kept: Box<dyn Any + Send + Sync> = Box::new(SharedHandlers(Arc::clone(&set)));
    let _ = class.handlers.set(Some(kept));
    set
}

/// Records that `class`'s agents share no handlers (its first agent that declared the cached
/// layout declared handlers that are not [`worth_sharing`]); a decision already made stands.
pub(super) fn decline(class: &AgentClass) {
    let _ = class.handlers.set(None);
}
