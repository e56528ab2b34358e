//! The handler table of one agent: which handler runs for a message of type `T` that came
//! from mbox `S` while the agent is in state `X`.
//!
//! The table has two parts. Its *layout* ([`HandlerLayout`]: the (mbox, type) pairs the agent
//! subscribed to and, per pair and state, the index of the handler that runs) is plain data,
//! the same for every agent whose definition produced it, and shared by them
//! (`agent/layout.rs`); the agent's own mbox appears in it as [`Source::Own`]. The handlers
//! themselves ([`Handlers`]) are the agent's own: closures may capture per-agent data. Those
//! that capture nothing are the same for every agent of the type and kept once for it, when
//! two or more (`handlers/shared.rs`).
//!
//! Lookup is an index, not a search: the layout hashes the message's type id into a small
//! table (a multiplier chosen when the layout is built, so that the subscribed types do not
//! share slots), checks the pair found there, and indexes that pair's row by state.
//! Inheritance is resolved ahead of time: each pair's row holds, for every state, the handler
//! declared in that state or in its nearest ancestor; the rows are one flat array.
//!
//! # Ground rules
//!
//! - Distinct keys (the 64 bits of a type id that its `Hash` writes) do not share a slot:
//!   [`HandlerTable::finish`] tries multipliers in tables of 4 to 16 slots per key and keeps
//!   the first collision-free one (found for every agent with up to a dozen or so subscribed
//!   types; with dozens, the one with the fewest shared slots). Pairs that land on one slot —
//!   one type from several sources, or keys that could not be kept apart — are chained from
//!   it; the chain is the only walk, one pair long for nearly every message.
//! - Every pair on the walk is checked by full type id and source: a message of a type
//!   nobody subscribed to lands on an empty slot or on another key's chain, and is not found,
//!   never given a wrong handler.
//! - An agent keeps no lookup cache: the layout is shared by every agent of its type, so the
//!   slots and rows stay hot in the cache whichever agent of the type runs, and an idle agent
//!   does not pay the bytes of a cache per agent (an earlier 2-entry cache of fat pointers
//!   cost 96 bytes an agent).
//! - A found handler is a plain borrow of the agent's own [`Handlers`] (or of its type's
//!   shared set, which they hold), disjoint from the agent and its context, which the handler
//!   takes mutably.

use super::Ctx;
use super::layout::AgentLayout;
use super::state::{State, StateTree};
use crate::error::DefineError;
use crate::ids::MboxId;
use crate::mbox::class::AgentClass;
use crate::message::payload::Lent;
use shared::{Folded, NewHandler, SharedHandler, Sharing};
use std::any::TypeId;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

/// A handler with its message type erased.
pub(crate) trait ErasedHandler<A>: Send {
    fn call(&self, agent: &mut A, ctx: &mut Ctx<A>, payload: Lent<'_>);
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
    fn call(&self, agent: &mut A, ctx: &mut Ctx<A>, payload: Lent<'_>) {
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

/// A subscribed (source, type) pair.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Key {
    type_id: TypeId,
    source: Source,
}

/// A handler declared directly in a state, as a definition declares it.
#[derive(Clone, Copy, PartialEq, Debug)]
struct Declared {
    /// The pair, by its index in the order pairs were first subscribed.
    pair: u32,
    state: State,
    /// The handler's index in the agent's handlers.
    handler: u32,
}

/// A subscribed pair in a finished layout.
#[derive(PartialEq, Debug)]
struct Pair {
    key: Key,
    /// The next pair in the same slot (in practice: the same type from another source), or
    /// `NONE`.
    next: u32,
}

/// The 64 bits of a type id that its `Hash` writes (already a hash: spread evenly).
#[inline(always)]
fn type_key(type_id: TypeId) -> u64 {
    /// Keeps what `TypeId::hash` writes.
    struct Bits(u64);
    impl Hasher for Bits {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = self.0.rotate_left(8) ^ u64::from(b);
            }
        }
        fn write_u64(&mut self, n: u64) {
            self.0 ^= n;
        }
    }
    let mut bits = Bits(0);
    type_id.hash(&mut bits);
    bits.0
}

/// Multipliers tried, in order, for each table size (odd, bits spread).
const MULTIPLIERS: [u64; 8] = [
    0x9E37_79B9_7F4A_7C15,
    0xBF58_476D_1CE4_E5B9,
    0x94D0_49BB_1331_11EB,
    0xD6E8_FEB8_6659_FD93,
    0xA076_1D64_78BD_642F,
    0xE703_7ED1_A0B4_28DB,
    0x8EBC_6AF0_9C88_C6E3,
    0x5895_65DD_CAF9_E3A1,
];

/// Table sizes tried: from 4 to 16 slots per key (rounded up to powers of two).
const SIZES: u32 = 3;

/// A multiplier and a table size (`1 << bits`, at least 2 slots) for the `keys` (distinct:
/// deduplicated by the caller): the first under which they take distinct slots, trying each
/// multiplier in tables of 4, then 8, then 16 slots per key; failing that (only likely with
/// dozens of keys: a collision-free multiplier needs a table growing with the square of the
/// keys), the one with the fewest keys sharing a slot in the largest table.
fn choose_hash(keys: &[u64]) -> (u64, u32) {
    let first = (keys.len() * 4).next_power_of_two().max(2).trailing_zeros();
    let mut slots = Vec::with_capacity(keys.len());
    let mut best = (usize::MAX, MULTIPLIERS[0], first);
    for bits in first..first + SIZES {
        for &mul in &MULTIPLIERS {
            slots.clear();
            slots.extend(keys.iter().map(|&k| slot_of(k, mul, bits)));
            slots.sort_unstable();
            let shared = slots.windows(2).filter(|w| w[0] == w[1]).count();
            if shared == 0 {
                return (mul, bits);
            }
            if shared <= best.0 {
                best = (shared, mul, bits);
            }
        }
    }
    (best.1, best.2)
}

/// The slot of `key` in a table of `1 << bits` slots hashed with `mul`.
#[inline(always)]
fn slot_of(key: u64, mul: u64, bits: u32) -> usize {
    // `bits` is at least 1 (a table has two slots or more), so the shift is below 64.
    (key.wrapping_mul(mul) >> (64 - bits)) as usize
}

/// The table as a definition builds it: subscriptions to queued (non-insend) handlers.
/// [`finish`](Self::finish) splits it into its layout and the agent's handlers.
///
/// A table made [`expecting`](Self::expecting) its type's cached layout compares each
/// declaration with that layout's as the definition goes and stores nothing while they are
/// the same: a definition that declares exactly the cached layout's pairs and handlers
/// allocates only its handlers ([`take_expected`](Self::take_expected)). The first
/// declaration that differs copies the matched start out of the layout and goes on alone.
pub(crate) struct HandlerTable<A: 'static> {
    own: MboxId,
    /// The pairs in the order first subscribed (empty while `expected` holds them).
    keys: Vec<Key>,
    /// Every handler declared in a state, in declaration order (as `keys`).
    declared: Vec<Declared>,
    /// The layout the declarations so far match, and how far.
    expected: Option<Expected>,
    handlers: Building<A>,
    /// What the type's class decided about sharing handlers (`shared.rs`), for a definition
    /// that declares the expected layout; taken by the first handler declared.
    sharing: Sharing<A>,
}

/// How far a definition matches the layout it expects ([`HandlerTable::expecting`]).
struct Expected {
    layout: Arc<AgentLayout>,
    keys: usize,
    declared: usize,
}

/// The handlers as a definition declares them, in order: the first alone, so that a single
/// handler (most agents) needs no vector; or, while they are its type's shared set's, folded
/// into it (`shared.rs`), so that they need none either.
enum Building<A: 'static> {
    None,
    One(Box<dyn ErasedHandler<A>>),
    Many(Vec<Box<dyn ErasedHandler<A>>>),
    /// Each declared handler so far is of the kind of the shared set's at its index.
    Folded(Folded<A>),
    /// Declared by an agent that decides its type's sharing: with their kinds.
    Deciding(Vec<NewHandler<A>>),
}

impl<A> Building<A> {
    fn len(&self) -> usize {
        match self {
            Building::None => 0,
            Building::One(_) => 1,
            Building::Many(many) => many.len(),
            Building::Folded(folded) => folded.len(),
            Building::Deciding(all) => all.len(),
        }
    }

    /// Adds `handler`, declared next; the first one takes `sharing` (its type's decision),
    /// which decides how they are all kept.
    fn push(&mut self, handler: NewHandler<A>, sharing: &mut Sharing<A>) {
        *self = match std::mem::replace(self, Building::None) {
            Building::None => match std::mem::replace(sharing, Sharing::Never) {
                Sharing::Set(set) => match Folded::start(set, handler) {
                    Ok(folded) => Building::Folded(folded),
                    Err(handler) => Building::One(handler.handler),
                },
                Sharing::Undecided => Building::Deciding(vec![handler]),
                Sharing::Never => Building::One(handler.handler),
            },
            Building::One(first) => Building::Many(vec![first, handler.handler]),
            Building::Many(mut many) => {
                many.push(handler.handler);
                Building::Many(many)
            }
            Building::Folded(mut folded) => match folded.push(handler) {
                Ok(()) => Building::Folded(folded),
                Err(handler) => {
                    let mut many: Vec<_> = folded.revive().collect();
                    many.push(handler.handler);
                    Building::Many(many)
                }
            },
            Building::Deciding(mut all) => {
                all.push(handler);
                Building::Deciding(all)
            }
        };
    }

    /// The handlers as the agent's own: one inline, any other number in a boxed slice.
    fn stored(self) -> Stored<A> {
        let many: Vec<_> = match self {
            Building::None => Vec::new(),
            Building::One(one) => return Stored::One(one),
            Building::Many(many) => many,
            Building::Folded(folded) => folded.revive().collect(),
            Building::Deciding(all) => all.into_iter().map(|h| h.handler).collect(),
        };
        if many.len() == 1 {
            let one = many.into_iter().next().expect("one handler");
            return Stored::One(one);
        }
        Stored::Many(many.into_boxed_slice())
    }
}

impl<A> HandlerTable<A> {
    /// An empty table of the agent whose own mbox is `own`.
    pub(crate) fn new(own: MboxId) -> Self {
        HandlerTable {
            own,
            keys: Vec::new(),
            declared: Vec::new(),
            expected: None,
            handlers: Building::None,
            sharing: Sharing::Never,
        }
    }

    /// An empty table that expects its definition to declare `layout`'s handlers (its type's
    /// cached layout, `agent/layout.rs`), with its class's decision on sharing handlers: see
    /// the type's docs.
    pub(crate) fn expecting(own: MboxId, layout: Arc<AgentLayout>, sharing: Sharing<A>) -> Self {
        HandlerTable {
            expected: Some(Expected {
                layout,
                keys: 0,
                declared: 0,
            }),
            sharing,
            ..HandlerTable::new(own)
        }
    }

    /// The pairs subscribed so far.
    fn keys(&self) -> impl Iterator<Item = Key> + '_ {
        let (expected, own) = match &self.expected {
            Some(e) => (&e.layout.handlers.pairs[..e.keys], &[][..]),
            None => (&[][..], &self.keys[..]),
        };
        expected.iter().map(|p| p.key).chain(own.iter().copied())
    }

    /// The handlers declared in a state so far.
    fn declared(&self) -> &[Declared] {
        match &self.expected {
            Some(e) => &e.layout.handlers.declared[..e.declared],
            None => &self.declared,
        }
    }

    /// Stops expecting: what matched so far is copied out of the expected layout.
    fn diverge(&mut self) {
        if let Some(e) = self.expected.take() {
            let handlers = &e.layout.handlers;
            self.keys = handlers.pairs[..e.keys].iter().map(|p| p.key).collect();
            self.declared = handlers.declared[..e.declared].to_vec();
        }
    }

    /// Subscribes a new pair; returns its index.
    fn push_key(&mut self, key: Key) -> usize {
        if let Some(e) = &mut self.expected {
            if e.layout.handlers.pairs.get(e.keys).map(|p| p.key) == Some(key) {
                e.keys += 1;
                return e.keys - 1;
            }
            self.diverge();
        }
        self.keys.push(key);
        self.keys.len() - 1
    }

    fn push_declared(&mut self, declared: Declared) {
        if let Some(e) = &mut self.expected {
            if e.layout.handlers.declared.get(e.declared) == Some(&declared) {
                e.declared += 1;
                return;
            }
            self.diverge();
        }
        self.declared.push(declared);
    }

    /// Adds `handler` for (source, type) in each of `states` (one stored handler serves them
    /// all).
    pub(crate) fn add(
        &mut self,
        source: MboxId,
        type_id: TypeId,
        type_name: &'static str,
        states: &[State],
        handler: NewHandler<A>,
        tree: &StateTree,
    ) -> Result<(), DefineError> {
        let key = Key {
            type_id,
            source: Source::of(source, self.own),
        };
        let pos = self.position(key);
        for (i, &state) in states.iter().enumerate() {
            tree.check(state)?;
            let declared_twice = states[..i].contains(&state)
                || pos.is_some_and(|p| {
                    self.declared()
                        .iter()
                        .any(|d| d.pair as usize == p && d.state == state)
                });
            if declared_twice {
                return Err(DefineError::DuplicateSubscription {
                    mbox: source,
                    message: type_name,
                    state: tree.name(state).to_owned(),
                });
            }
        }
        let pair = match pos {
            Some(pos) => pos,
            None => self.push_key(key),
        };
        let pair = u32::try_from(pair).expect("invariant: fewer than 2^32 subscriptions");
        let handler_index =
            u32::try_from(self.handlers.len()).expect("invariant: fewer than 2^32 handlers");
        self.handlers.push(handler, &mut self.sharing);
        for &state in states {
            self.push_declared(Declared {
                pair,
                state,
                handler: handler_index,
            });
        }
        Ok(())
    }

    /// True if (source, type) has a handler in some state.
    pub(crate) fn subscribes(&self, source: MboxId, type_id: TypeId) -> bool {
        self.position(Key {
            type_id,
            source: Source::of(source, self.own),
        })
        .is_some()
    }

    /// How many (source, type) pairs are subscribed, for diagnostics.
    pub(crate) fn subscriptions(&self) -> usize {
        self.keys().count()
    }

    /// The expected layout, if the definition declared exactly its pairs and handlers in a
    /// tree equal to its `states` (nothing was stored for them): the table keeps only the
    /// agent's handlers ([`into_handlers`](Self::into_handlers)).
    pub(crate) fn take_expected(&mut self, states: &StateTree) -> Option<Arc<AgentLayout>> {
        let e = self.expected.as_ref()?;
        let all = e.keys == e.layout.handlers.pairs.len()
            && e.declared == e.layout.handlers.declared.len()
            && e.layout.states == *states;
        if !all {
            return None;
        }
        self.expected.take().map(|e| e.layout)
    }

    /// The agent's handlers, indexed by the layout [`take_expected`](Self::take_expected)
    /// gave: its type's shared set if they are the set's handlers, or if they are the first
    /// to decide for `class` (the class of `A`) and worth sharing (`shared.rs`). A single
    /// handler is worth sharing only if `share_one` (a type whose definition may be recorded,
    /// `agent/define_once.rs`: the record gives later agents the set).
    pub(crate) fn into_handlers(self, class: &AgentClass, share_one: bool) -> Handlers<A> {
        let handlers = match self.handlers {
            Building::Folded(folded) => match folded.complete() {
                Ok(set) => Stored::Shared(set),
                Err(folded) => Building::Folded(folded).stored(),
            },
            Building::Deciding(all) if shared::worth_sharing(&all, share_one) => {
                Stored::Shared(shared::publish(class, all))
            }
            Building::Deciding(all) => {
                shared::decline(class);
                Building::Deciding(all).stored()
            }
            building => building.stored(),
        };
        Handlers { handlers }
    }

    /// Resolves every state's effective handler (`states` is final), builds the type index
    /// and splits the table.
    pub(crate) fn finish(mut self, states: &StateTree) -> (HandlerLayout, Handlers<A>) {
        self.diverge();
        let HandlerTable {
            own: _,
            keys,
            declared,
            expected: _,
            handlers,
            sharing: _,
        } = self;
        let mut rows = Vec::with_capacity(keys.len() * states.len());
        for pair in 0..keys.len() {
            rows.extend((0..states.len()).map(|i| {
                let s = State(u16::try_from(i).expect("invariant: state count fits u16"));
                states
                    .self_and_ancestors(s)
                    .find_map(|st| {
                        declared
                            .iter()
                            .find(|d| d.pair as usize == pair && d.state == st)
                            .map(|d| d.handler)
                    })
                    .unwrap_or(NONE)
            }));
        }
        let layout = HandlerLayout::index(
            &keys,
            declared.into_boxed_slice(),
            rows.into_boxed_slice(),
            states.len(),
        );
        let handlers = Handlers {
            handlers: handlers.stored(),
        };
        (layout, handlers)
    }

    fn position(&self, key: Key) -> Option<usize> {
        self.keys().position(|k| k == key)
    }
}

/// The shape of a handler table: which handler (by index) runs for each (source, type, state).
/// Shared by every agent whose definition produced it.
#[derive(PartialEq, Debug)]
pub(crate) struct HandlerLayout {
    /// Per slot: the first pair whose key hashed there, or `NONE`.
    slots: Box<[u32]>,
    mul: u64,
    bits: u32,
    /// The pairs in the order the definition first subscribed them.
    pairs: Box<[Pair]>,
    /// What the definition declared, in its order (compared by the next definition of the
    /// type, [`HandlerTable::expecting`]).
    declared: Box<[Declared]>,
    /// Per pair, per state: the effective handler index, or `NONE`.
    rows: Box<[u32]>,
    states: usize,
}

impl HandlerLayout {
    /// The layout of the distinct pairs `keys`, `declared` in their states, with their
    /// resolved `rows`.
    fn index(
        keys: &[Key],
        declared: Box<[Declared]>,
        rows: Box<[u32]>,
        states: usize,
    ) -> HandlerLayout {
        let mut hashes: Vec<u64> = keys.iter().map(|k| type_key(k.type_id)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        let (mul, bits) = choose_hash(&hashes);
        let mut slots = vec![NONE; 1 << bits].into_boxed_slice();
        let mut pairs: Vec<Pair> = Vec::with_capacity(keys.len());
        // Chained from the back, so that a key's pairs are walked in declaration order.
        for (i, &key) in keys.iter().enumerate().rev() {
            let slot = &mut slots[slot_of(type_key(key.type_id), mul, bits)];
            pairs.push(Pair { key, next: *slot });
            *slot = u32::try_from(i).expect("invariant: fewer than 2^32 subscriptions");
        }
        pairs.reverse();
        HandlerLayout {
            slots,
            mul,
            bits,
            pairs: pairs.into_boxed_slice(),
            declared,
            rows,
            states,
        }
    }

    /// The index of the handler for a message from `source` of type `type_id` in `state`.
    #[inline(always)]
    fn find(&self, source: Source, type_id: TypeId, state: State) -> Option<usize> {
        let mut at = self.slots[slot_of(type_key(type_id), self.mul, self.bits)];
        while let Some(pair) = self.pairs.get(at as usize) {
            if pair.key.type_id == type_id && pair.key.source == source {
                if state.index() >= self.states {
                    return None;
                }
                let index = self.rows[at as usize * self.states + state.index()];
                return (index != NONE).then_some(index as usize);
            }
            at = pair.next;
        }
        None
    }
}

/// Handlers that every agent of a type can have without a definition of its own: its type's
/// shared set (`shared.rs`), or none (`agent/define_once.rs`).
pub(crate) enum TypeHandlers<A: 'static> {
    None,
    Set(Arc<[SharedHandler<A>]>),
}

/// One agent's handlers, indexed by its [`HandlerLayout`]. Its own mbox's id is not kept
/// here: the cell passes it from the agent's shared part (8 bytes less in every cell).
pub(crate) struct Handlers<A: 'static> {
    handlers: Stored<A>,
}

/// An agent's handler closures: one (most agents) inline, where a boxed slice would be one
/// more allocation kept per agent; its type's shared set (`shared.rs`); any other number in a
/// boxed slice.
enum Stored<A: 'static> {
    One(Box<dyn ErasedHandler<A>>),
    Shared(Arc<[SharedHandler<A>]>),
    Many(Box<[Box<dyn ErasedHandler<A>>]>),
}

impl<A> Handlers<A> {
    /// These handlers as every agent of the type can have them, if they are its type's shared
    /// set or none.
    pub(crate) fn of_type(&self) -> Option<TypeHandlers<A>> {
        match &self.handlers {
            Stored::Shared(set) => Some(TypeHandlers::Set(Arc::clone(set))),
            Stored::Many(many) if many.is_empty() => Some(TypeHandlers::None),
            Stored::One(_) | Stored::Many(_) => None,
        }
    }

    /// An agent's handlers, the same as those [`of_type`](Self::of_type) gave.
    pub(crate) fn from_type(handlers: &TypeHandlers<A>) -> Self {
        Handlers {
            handlers: match handlers {
                TypeHandlers::None => Stored::Many(Box::new([])),
                TypeHandlers::Set(set) => Stored::Shared(Arc::clone(set)),
            },
        }
    }

    /// The handler for a message from `source` of type `type_id` in `state`, for the agent
    /// whose own mbox is `own`; `layout` is the one [`HandlerTable::finish`] gave with these
    /// handlers (or an equal one).
    #[inline(always)]
    pub(crate) fn lookup(
        &self,
        layout: &HandlerLayout,
        own: MboxId,
        source: MboxId,
        type_id: TypeId,
        state: State,
    ) -> Option<&dyn ErasedHandler<A>> {
        let index = layout.find(Source::of(source, own), type_id, state)?;
        match &self.handlers {
            Stored::One(one) => (index == 0).then_some(one.as_ref()),
            Stored::Shared(set) => set.get(index).map(|shared| shared.handler.as_ref()),
            Stored::Many(many) => many.get(index).map(AsRef::as_ref),
        }
    }
}

pub(crate) mod shared;

#[cfg(test)]
mod tests;
