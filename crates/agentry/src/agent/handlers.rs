//! The handler table of one agent: which handler runs for a message of type `T` that came
//! from mbox `S` while the agent is in state `X`.
//!
//! The table has two parts. Its *layout* ([`HandlerLayout`]: the (mbox, type) pairs the agent
//! subscribed to and, per pair and state, the index of the handler that runs) is plain data,
//! the same for every agent whose definition produced it, and shared by them
//! (`agent/layout.rs`); the agent's own mbox appears in it as [`Source::Own`]. The handlers
//! themselves ([`Handlers`]) are the agent's own: closures may capture per-agent data.
//!
//! Lookup is a short linear scan over the pairs of the shared layout, then an array index by
//! state. Inheritance is resolved ahead of time: each pair keeps a row with, for every state,
//! the handler declared in that state or in its nearest ancestor.
//!
//! # Ground rules
//!
//! - An agent keeps no lookup cache: the layout is shared by every agent of its type, so the
//!   scan reads lines that stay hot in the cache whichever agent of the type runs, and an
//!   idle agent does not pay the bytes of a cache per agent (an earlier 2-entry cache of fat
//!   pointers cost 96 bytes an agent).
//! - A found handler is a plain borrow of the agent's own [`Handlers`], disjoint from the
//!   agent and its context, which the handler takes mutably.

use super::Ctx;
use super::state::{State, StateTree};
use crate::error::DefineError;
use crate::ids::MboxId;
use crate::message::payload::Payload;
use std::any::TypeId;
use std::marker::PhantomData;

/// A handler with its message type erased.
pub(crate) trait ErasedHandler<A>: Send {
    fn call(&self, agent: &mut A, ctx: &mut Ctx<A>, payload: Payload);
}

/// A typed handler `Fn(&mut A, &mut Ctx<A>, M)`.
pub(crate) struct TypedHandler<M, F> {
    f: F,
    _message: PhantomData<fn(M)>,
}

impl<M, F> TypedHandler<M, F> {
    pub(crate) fn new(f: F) -> Self {
        TypedHandler {
            f,
            _message: PhantomData,
        }
    }
}

impl<A, M, F> ErasedHandler<A> for TypedHandler<M, F>
where
    M: Send + 'static,
    F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
{
    #[inline]
    fn call(&self, agent: &mut A, ctx: &mut Ctx<A>, payload: Payload) {
        // SAFETY: the table stores this handler under `TypeId::of::<M>()` and the lookup matched
        // the payload's type id against it.
        let message = unsafe { payload.take_unchecked::<M>() };
        (self.f)(agent, ctx, message)
    }
}

const NONE: u32 = u32::MAX;

/// Where a subscribed message comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Source {
    /// The agent's own direct mbox (whichever agent shares the layout).
    Own,
    /// Another mbox (a multi mbox the agent subscribed to).
    Other(MboxId),
}

impl Source {
    /// `source` as seen by the agent whose own mbox is `own`.
    fn of(source: MboxId, own: MboxId) -> Source {
        if source == own {
            Source::Own
        } else {
            Source::Other(source)
        }
    }
}

#[derive(PartialEq)]
struct Entry {
    source: Source,
    type_id: TypeId,
    type_name: &'static str,
    /// Handlers declared directly in a state: (state, index into the handlers).
    declared: Vec<(State, u32)>,
    /// Per state: the effective handler index, or `NONE` (filled in by `finish`).
    resolved: Box<[u32]>,
}

/// The table as a definition builds it: subscriptions to queued (non-insend) handlers.
/// [`finish`](Self::finish) splits it into its layout and the agent's handlers.
pub(crate) struct HandlerTable<A: 'static> {
    own: MboxId,
    entries: Vec<Entry>,
    handlers: Vec<Box<dyn ErasedHandler<A>>>,
}

impl<A> HandlerTable<A> {
    /// An empty table of the agent whose own mbox is `own`.
    pub(crate) fn new(own: MboxId) -> Self {
        HandlerTable {
            own,
            entries: Vec::new(),
            handlers: Vec::new(),
        }
    }

    /// Adds `handler` for (source, type) in each of `states` (one stored handler serves them
    /// all).
    pub(crate) fn add(
        &mut self,
        source: MboxId,
        type_id: TypeId,
        type_name: &'static str,
        states: &[State],
        handler: Box<dyn ErasedHandler<A>>,
        tree: &StateTree,
    ) -> Result<(), DefineError> {
        let key = Source::of(source, self.own);
        for (i, &state) in states.iter().enumerate() {
            tree.check(state)?;
            let declared_twice = states[..i].contains(&state)
                || self
                    .position(key, type_id)
                    .is_some_and(|p| self.entries[p].declared.iter().any(|&(s, _)| s == state));
            if declared_twice {
                return Err(DefineError::DuplicateSubscription {
                    mbox: source,
                    message: type_name,
                    state: tree.name(state).to_owned(),
                });
            }
        }
        let pos = match self.position(key, type_id) {
            Some(pos) => pos,
            None => {
                self.entries.push(Entry {
                    source: key,
                    type_id,
                    type_name,
                    declared: Vec::new(),
                    resolved: Box::new([]),
                });
                self.entries.len() - 1
            }
        };
        self.handlers.push(handler);
        let index =
            u32::try_from(self.handlers.len() - 1).expect("invariant: fewer than 2^32 handlers");
        self.entries[pos]
            .declared
            .extend(states.iter().map(|&s| (s, index)));
        Ok(())
    }

    /// True if (source, type) has a handler in some state.
    pub(crate) fn subscribes(&self, source: MboxId, type_id: TypeId) -> bool {
        self.position(Source::of(source, self.own), type_id)
            .is_some()
    }

    /// How many (source, type) pairs are subscribed, for diagnostics.
    pub(crate) fn subscriptions(&self) -> usize {
        self.entries.len()
    }

    /// Resolves every state's effective handler (`states` is final) and splits the table.
    pub(crate) fn finish(self, states: &StateTree) -> (HandlerLayout, Handlers<A>) {
        let HandlerTable {
            own,
            mut entries,
            handlers,
        } = self;
        for entry in &mut entries {
            entry.resolved = (0..states.len())
                .map(|i| {
                    let s = State(u16::try_from(i).expect("invariant: state count fits u16"));
                    states
                        .self_and_ancestors(s)
                        .find_map(|st| {
                            entry
                                .declared
                                .iter()
                                .find(|(d, _)| *d == st)
                                .map(|&(_, h)| h)
                        })
                        .unwrap_or(NONE)
                })
                .collect();
        }
        let layout = HandlerLayout {
            entries: entries.into_boxed_slice(),
        };
        let handlers = Handlers {
            own,
            handlers: match <[_; 1]>::try_from(handlers) {
                Ok([one]) => Stored::One(one),
                Err(handlers) => Stored::Many(handlers.into_boxed_slice()),
            },
        };
        (layout, handlers)
    }

    fn position(&self, source: Source, type_id: TypeId) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.type_id == type_id && e.source == source)
    }
}

/// The shape of a handler table: which handler (by index) runs for each (source, type, state).
/// Shared by every agent whose definition produced it.
#[derive(PartialEq)]
pub(crate) struct HandlerLayout {
    entries: Box<[Entry]>,
}

impl HandlerLayout {
    /// The index of the handler for a message from `source` of type `type_id` in `state`.
    #[inline]
    fn find(&self, source: Source, type_id: TypeId, state: State) -> Option<usize> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.type_id == type_id && e.source == source)?;
        let index = *entry.resolved.get(state.index())?;
        (index != NONE).then_some(index as usize)
    }
}

/// One agent's handlers, indexed by its [`HandlerLayout`].
pub(crate) struct Handlers<A: 'static> {
    own: MboxId,
    handlers: Stored<A>,
}

/// An agent's handler closures: one (most agents) inline, where a boxed slice would be one
/// more allocation kept per agent; any other number in a boxed slice.
enum Stored<A: 'static> {
    One(Box<dyn ErasedHandler<A>>),
    Many(Box<[Box<dyn ErasedHandler<A>>]>),
}

impl<A> Handlers<A> {
    /// The handler for a message from `source` of type `type_id` in `state`; `layout` is the
    /// one [`HandlerTable::finish`] gave with these handlers (or an equal one).
    #[inline]
    pub(crate) fn lookup(
        &self,
        layout: &HandlerLayout,
        source: MboxId,
        type_id: TypeId,
        state: State,
    ) -> Option<&dyn ErasedHandler<A>> {
        let index = layout.find(Source::of(source, self.own), type_id, state)?;
        match &self.handlers {
            Stored::One(one) => (index == 0).then_some(one.as_ref()),
            Stored::Many(many) => many.get(index).map(AsRef::as_ref),
        }
    }
}

#[cfg(test)]
mod tests;
