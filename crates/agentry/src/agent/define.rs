//! `Define<A>`: an agent describes itself (states, subscriptions, limits) at registration.

use super::handlers::HandlerTable;
use super::handlers::shared::{NewHandler, Sharing};
use super::layout::AgentLayout;
use super::protocol::{self, Protocol};
use super::state::{Hook, State, StateTree};
use super::{Agent, Ctx};
use crate::error::DefineError;
use crate::mbox::event_priority::EventPriorities;
use crate::mbox::insend::{InsendCtx, InsendFn, InsendTable};
use crate::mbox::limit::{LimitEntry, Overload};
use crate::mbox::{Mbox, MultiMbox, SubscriberOptions};
use crate::panic_reaction::PanicReaction;
use crate::priority::Priority;
use crate::request::Request;
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What a registration checks of a definition once `define` returned: nothing, or that it
/// handles the agent's protocol ([`Define::check_protocol`]). A supervised agent's restarts
/// check each new definition the same way.
pub(crate) enum DefinitionCheck<A: Agent> {
    Unchecked,
    Protocol(fn(&Define<A>) -> Result<(), DefineError>),
}

// Not derived: a derive would ask `A: Copy`.
impl<A: Agent> Clone for DefinitionCheck<A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Agent> Copy for DefinitionCheck<A> {}

impl<A: Agent> DefinitionCheck<A> {
    /// The check of a typed agent's registration: its definition handles its protocol.
    pub(crate) fn protocol() -> Self
    where
        A: Protocol,
    {
        DefinitionCheck::Protocol(Define::check_protocol)
    }

    /// Checks `def`.
    pub(crate) fn run(self, def: &Define<A>) -> Result<(), DefineError> {
        match self {
            DefinitionCheck::Unchecked => Ok(()),
            DefinitionCheck::Protocol(check) => check(def),
        }
    }

    /// True if it checks something (a definition recorded unchecked does not serve it,
    /// `agent/define_once.rs`).
    pub(crate) fn checks(self) -> bool {
        matches!(self, DefinitionCheck::Protocol(_))
    }
}

/// A subscription of the agent to a multi mbox, activated when the coop is registered.
pub(crate) struct MultiSubscriptionDef {
    pub(crate) mbox: MultiMbox,
    pub(crate) type_id: TypeId,
    pub(crate) options: SubscriberOptions,
}

/// The definition of one agent, filled in by [`Agent::define`].
///
/// Handlers subscribed without a state belong to [`State::DEFAULT`]. A substate inherits the
/// handlers of its ancestors unless it subscribes its own handler for the same (mbox, type).
/// Subscribing the same (mbox, type, state) twice is a [`DefineError`].
///
/// ```
/// use agentry::{Agent, Ctx, Define, DefineError, State};
///
/// struct Ping;
/// struct Lamp { on: State }
///
/// impl Agent for Lamp {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         self.on = def.state("on")?;
///         def.on(|_: &mut Lamp, ctx: &mut Ctx<Lamp>, _: Ping| {
///             let on = ctx.state();
///             let _ = on;
///         })?;
///         def.in_state(self.on).on(|lamp: &mut Lamp, ctx: &mut Ctx<Lamp>, _: Ping| {
///             ctx.change_state(State::DEFAULT).expect("known state");
///             let _ = lamp;
///         })?;
///         Ok(())
///     }
/// }
/// ```
pub struct Define<A: Agent> {
    pub(crate) me: Mbox,
    pub(crate) states: StateTree,
    /// The state hooks, by the index the tree gives them.
    pub(crate) hooks: Vec<Hook<A>>,
    pub(crate) table: HandlerTable<A>,
    pub(crate) insend: InsendTable,
    pub(crate) event_priorities: EventPriorities,
    pub(crate) limits: Vec<LimitEntry>,
    pub(crate) multi: Vec<MultiSubscriptionDef>,
    pub(crate) initial: State,
    pub(crate) panic_reaction: Option<PanicReaction>,
    pub(crate) priority: Priority,
    pub(crate) time_handlers: bool,
    pub(crate) track_depth: bool,
}

impl<A: Agent> Define<A> {
    /// A definition of the agent whose own mbox is `me`; `expected`: its type's cached layout,
    /// which its handler table is compared with as it goes (`HandlerTable::expecting`), with
    /// its class's handlers shared by type, if any (`agent/handlers/shared.rs`).
    pub(crate) fn new(me: Mbox, expected: Option<Arc<AgentLayout>>) -> Self {
        let own = me.id();
        let table = match expected {
            Some(layout) => HandlerTable::expecting(own, layout, Sharing::of(me.shared().class())),
            None => HandlerTable::new(own),
        };
        Define {
            me,
            states: StateTree::new(),
            hooks: Vec::new(),
            table,
            insend: InsendTable::default(),
            event_priorities: EventPriorities::default(),
            limits: Vec::new(),
            multi: Vec::new(),
            initial: State::DEFAULT,
            panic_reaction: None,
            priority: Priority::P0,
            time_handlers: false,
            track_depth: false,
        }
    }

    /// The agent's own direct mbox (already valid; messages are accepted once the coop is
    /// registered).
    pub fn mbox(&self) -> &Mbox {
        &self.me
    }

    /// A new top-level state (a sibling of [`State::DEFAULT`]).
    pub fn state(&mut self, name: impl Into<Cow<'static, str>>) -> Result<State, DefineError> {
        self.states.add(name.into(), None)
    }

    /// A new substate of `parent`; it inherits `parent`'s handlers.
    pub fn substate(
        &mut self,
        parent: State,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<State, DefineError> {
        self.states.add(name.into(), Some(parent))
    }

    /// Entering `parent` enters `child` (a direct substate) as well.
    pub fn initial_substate(
        &mut self,
        parent: State,
        child: State,
    ) -> Result<&mut Self, DefineError> {
        self.states.set_initial_substate(parent, child)?;
        Ok(self)
    }

    /// The state the agent starts in (its on_enter hooks run before `on_start`).
    pub fn start_in(&mut self, state: State) -> Result<&mut Self, DefineError> {
        self.states.check(state)?;
        self.initial = state;
        Ok(self)
    }

    /// After `limit` in `state` — counted from entering it, its substates included — the agent
    /// switches to `then`. Leaving `state` earlier cancels the limit; entering it again starts
    /// it afresh.
    pub fn time_limit(
        &mut self,
        state: State,
        limit: Duration,
        then: State,
    ) -> Result<&mut Self, DefineError> {
        self.states.set_time_limit(state, limit, then)?;
        Ok(self)
    }

    /// A hook run whenever the agent enters `state`.
    pub fn on_enter(
        &mut self,
        state: State,
        hook: impl Fn(&mut A, &mut Ctx<A>) + Send + 'static,
    ) -> Result<&mut Self, DefineError> {
        self.states.set_on_enter(state, self.next_hook()?)?;
        self.hooks.push(Box::new(hook));
        Ok(self)
    }

    /// A hook run whenever the agent leaves `state` (and when it finishes while in it).
    pub fn on_exit(
        &mut self,
        state: State,
        hook: impl Fn(&mut A, &mut Ctx<A>) + Send + 'static,
    ) -> Result<&mut Self, DefineError> {
        self.states.set_on_exit(state, self.next_hook()?)?;
        self.hooks.push(Box::new(hook));
        Ok(self)
    }

    /// Handles `M` from the agent's own mbox in the default state.
    pub fn on<M, F>(&mut self, handler: F) -> Result<&mut Self, DefineError>
    where
        M: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
    {
        self.in_states(&[State::DEFAULT]).on(handler)
    }

    /// Answers requests `Q` with `R` (see [`Mbox::request`]) in the default state.
    pub fn on_request<Q, R, F>(&mut self, handler: F) -> Result<&mut Self, DefineError>
    where
        Q: Send + 'static,
        R: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, Q) -> R + Send + 'static,
    {
        self.in_states(&[State::DEFAULT]).on_request(handler)
    }

    /// Subscribes handlers of the agent's own mbox in `state`.
    pub fn in_state(&mut self, state: State) -> InStates<'_, A> {
        self.in_states(&[state])
    }

    /// Subscribes handlers of the agent's own mbox in each of `states`.
    pub fn in_states(&mut self, states: &[State]) -> InStates<'_, A> {
        InStates {
            def: self,
            states: Chosen::of(states),
        }
    }

    /// An insend handler for `M` on the agent's own mbox: it runs on the sender's thread
    /// before `send` returns, in every state, and cannot touch the agent itself (see
    /// [`InsendCtx`]).
    pub fn insend<M, F>(&mut self, handler: F) -> Result<&mut Self, DefineError>
    where
        M: Send + 'static,
        F: Fn(&InsendCtx<'_>, M) + Send + Sync + 'static,
    {
        let conflict = || DefineError::InsendConflict {
            mbox: self.me.id(),
            message: std::any::type_name::<M>(),
        };
        if self.table.subscribes(self.me.id(), TypeId::of::<M>()) {
            return Err(conflict());
        }
        if !self.insend.insert::<M>(Box::new(handler) as InsendFn<M>) {
            return Err(conflict());
        }
        Ok(self)
    }

    /// Subscribes to messages of a multi mbox.
    pub fn from(&mut self, mbox: &MultiMbox) -> FromMulti<'_, A> {
        FromMulti {
            def: self,
            mbox: mbox.clone(),
            states: Vec::new(),
            priority: None,
        }
    }

    /// At most `max` messages of type `M` may wait in this agent's queue; the next one meets
    /// `reaction`. For messages from a multi mbox, `M` is `Arc<T>`.
    pub fn limit<M: Send + 'static>(
        &mut self,
        max: usize,
        reaction: Overload<M>,
    ) -> Result<&mut Self, DefineError> {
        if self.limits.iter().any(|l| l.type_id() == TypeId::of::<M>()) {
            return Err(DefineError::DuplicateLimit(std::any::type_name::<M>()));
        }
        self.limits.push(LimitEntry::new(max, reaction));
        Ok(self)
    }

    /// The agent's priority, for priority dispatchers (default `P0`; other dispatchers ignore
    /// it).
    pub fn priority(&mut self, priority: Priority) -> &mut Self {
        self.priority = priority;
        self
    }

    /// The event priority of messages of type `M` sent to the agent's own mbox (default
    /// `P0`): on every dispatcher, a queued message of a higher event priority is handled
    /// before the queued messages of lower ones — inside the agent's queue (the agent's or
    /// coop's queue on a thread pool, the lane of the agent's priority on a priority
    /// dispatcher, the thread's queue on the one-thread dispatchers). Messages of one
    /// priority keep their FIFO order; per-sender FIFO holds per priority only. The
    /// priority holds in every state; for requests `M` is [`Request<Q, R>`](Request); an insend
    /// handler's type ignores it. A second, different priority for `M` is
    /// [`DefineError::ConflictingPriority`].
    ///
    /// ```
    /// use agentry::{Agent, Ctx, Define, DefineError, Priority};
    ///
    /// struct Tick;
    /// struct Cancel;
    /// struct Trader;
    ///
    /// impl Agent for Trader {
    ///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
    ///         def.event_priority::<Cancel>(Priority::P7)?
    ///             .on(|_: &mut Trader, _: &mut Ctx<Trader>, _: Tick| {})?
    ///             .on(|_: &mut Trader, _: &mut Ctx<Trader>, _: Cancel| {})?;
    ///         Ok(())
    ///     }
    /// }
    /// ```
    pub fn event_priority<M: Send + 'static>(
        &mut self,
        priority: Priority,
    ) -> Result<&mut Self, DefineError> {
        let source = self.me.id();
        self.declare_event_priority(
            source,
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            priority,
        )?;
        Ok(self)
    }

    fn declare_event_priority(
        &mut self,
        source: crate::ids::MboxId,
        type_id: TypeId,
        message: &'static str,
        priority: Priority,
    ) -> Result<(), DefineError> {
        self.event_priorities
            .declare(source, type_id, priority)
            .map_err(|_| DefineError::ConflictingPriority {
                mbox: source,
                message,
            })
    }

    /// What happens when one of this agent's handlers panics (default: the coop's reaction;
    /// for an agent added with [`Coop::add_supervised`](crate::Coop::add_supervised),
    /// [`PanicReaction::Supervise`]).
    pub fn panic_reaction(&mut self, reaction: PanicReaction) -> &mut Self {
        self.panic_reaction = Some(reaction);
        self
    }

    /// Measures the time this agent's handlers take (`AgentStats::handler_time`), whatever
    /// the environment's setting ([`EnvBuilder::handler_time`](crate::EnvBuilder::handler_time)).
    /// The runs timed are the environment's sample
    /// ([`EnvBuilder::handler_time_sampling`](crate::EnvBuilder::handler_time_sampling): one in
    /// 256 by default, so a few messages may all go untimed); two clock reads per timed run.
    pub fn measure_handler_time(&mut self) -> &mut Self {
        self.time_handlers = true;
        self
    }

    /// Tracks how many messages wait in this agent's queue (`AgentStats::queue_depth`),
    /// whatever the environment's setting
    /// ([`EnvBuilder::queue_depth`](crate::EnvBuilder::queue_depth)). Costs an atomic
    /// increment per send and a decrement per message taken.
    pub fn track_queue_depth(&mut self) -> &mut Self {
        self.track_depth = true;
        self
    }

    /// The registration check of a typed agent: every type of its protocol has a handler on
    /// its own mbox, queued (in some state) or insend.
    pub(crate) fn check_protocol(&self) -> Result<(), DefineError>
    where
        A: Protocol,
    {
        let own = self.me.id();
        let handles = |t| self.table.subscribes(own, t) || self.insend.contains_id(t);
        match protocol::first_unhandled::<A::Messages>(handles) {
            Some(message) => Err(DefineError::UnhandledProtocolMessage(message)),
            None => Ok(()),
        }
    }

    /// The index the next hook gets.
    fn next_hook(&self) -> Result<u32, DefineError> {
        // At most two hooks per state, and states are numbered by `u16`.
        u32::try_from(self.hooks.len()).map_err(|_| DefineError::TooManyStates)
    }

    fn add_handler<M, F>(
        &mut self,
        source: crate::ids::MboxId,
        states: &[State],
        handler: F,
    ) -> Result<(), DefineError>
    where
        M: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
    {
        let states = if states.is_empty() {
            &[State::DEFAULT][..]
        } else {
            states
        };
        self.table.add(
            source,
            TypeId::of::<M>(),
            std::any::type_name::<M>(),
            states,
            NewHandler::typed(handler),
            &self.states,
        )
    }
}

impl<A: Agent> fmt::Debug for Define<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Define")
            .field("agent", &std::any::type_name::<A>())
            .field("states", &self.states.len())
            .field("subscriptions", &self.table.subscriptions())
            .finish_non_exhaustive()
    }
}

/// Builder for handlers of the agent's own mbox in chosen states.
pub struct InStates<'d, A: Agent> {
    def: &'d mut Define<A>,
    states: Chosen,
}

/// The states a handler is subscribed in: one (nearly every subscription) inline, so that
/// `def.on(..)` allocates nothing for it.
enum Chosen {
    One(State),
    Many(Vec<State>),
}

impl Chosen {
    fn of(states: &[State]) -> Chosen {
        match states {
            [one] => Chosen::One(*one),
            many => Chosen::Many(many.to_vec()),
        }
    }

    fn push(&mut self, state: State) {
        match self {
            Chosen::One(one) => *self = Chosen::Many(vec![*one, state]),
            Chosen::Many(many) => many.push(state),
        }
    }

    fn as_slice(&self) -> &[State] {
        match self {
            Chosen::One(one) => std::slice::from_ref(one),
            Chosen::Many(many) => many,
        }
    }
}

impl<'d, A: Agent> InStates<'d, A> {
    /// Also in `state`.
    pub fn in_state(mut self, state: State) -> Self {
        self.states.push(state);
        self
    }

    /// Handles `M` in the chosen states.
    pub fn on<M, F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        M: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, M) + Send + 'static,
    {
        if self.def.insend.contains::<M>() {
            return Err(DefineError::InsendConflict {
                mbox: self.def.me.id(),
                message: std::any::type_name::<M>(),
            });
        }
        let source = self.def.me.id();
        self.def
            .add_handler(source, self.states.as_slice(), handler)?;
        Ok(self.def)
    }

    /// Answers requests `Q` with `R` in the chosen states.
    pub fn on_request<Q, R, F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        Q: Send + 'static,
        R: Send + 'static,
        F: Fn(&mut A, &mut Ctx<A>, Q) -> R + Send + 'static,
    {
        self.on(move |a: &mut A, c: &mut Ctx<A>, request: Request<Q, R>| {
            let (query, reply) = request.into_parts();
            // A requester that gave up is counted by `reply` itself.
            let _ = reply.reply(handler(a, c, query));
        })
    }
}

/// Builder for a subscription to a multi mbox.
pub struct FromMulti<'d, A: Agent> {
    def: &'d mut Define<A>,
    mbox: MultiMbox,
    states: Vec<State>,
    priority: Option<Priority>,
}

impl<'d, A: Agent> FromMulti<'d, A> {
    /// Handles the messages in `state` (repeatable; default: the default state).
    pub fn in_state(mut self, state: State) -> Self {
        self.states.push(state);
        self
    }

    /// The event priority of this subscription's messages (see [`Define::event_priority`]).
    pub fn event_priority(mut self, priority: Priority) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Delivers only messages for which `filter` returns true. The filter runs on the sender's
    /// thread, so it must be `Send + Sync`.
    pub fn filter<T, P>(self, filter: P) -> Filtered<'d, A, T>
    where
        T: Send + Sync + 'static,
        P: Fn(&T) -> bool + Send + Sync + 'static,
    {
        let filter: crate::mbox::FilterFn<T> = Box::new(filter);
        Filtered {
            from: self,
            filter: Arc::new(filter),
        }
    }

    /// Handles `T` (shared: the handler gets an `Arc<T>`).
    pub fn on<T, F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        T: Send + Sync + 'static,
        F: Fn(&mut A, &mut Ctx<A>, Arc<T>) + Send + 'static,
    {
        subscribe_multi::<A, T, F>(self, None, Kind::Queued(handler))
    }

    /// An insend handler for `T` from this mbox (see [`Define::insend`]).
    pub fn insend<T, F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        T: Send + Sync + 'static,
        F: Fn(&InsendCtx<'_>, Arc<T>) + Send + Sync + 'static,
    {
        subscribe_multi::<A, T, fn(&mut A, &mut Ctx<A>, Arc<T>)>(
            self,
            None,
            Kind::Insend(Box::new(handler)),
        )
    }
}

/// Builder for a filtered subscription to a multi mbox.
pub struct Filtered<'d, A: Agent, T> {
    from: FromMulti<'d, A>,
    filter: Arc<crate::mbox::FilterFn<T>>,
}

impl<'d, A: Agent, T: Send + Sync + 'static> Filtered<'d, A, T> {
    /// Handles the messages in `state` too.
    pub fn in_state(mut self, state: State) -> Self {
        self.from.states.push(state);
        self
    }

    /// The event priority of this subscription's messages (see [`Define::event_priority`]).
    pub fn event_priority(mut self, priority: Priority) -> Self {
        self.from.priority = Some(priority);
        self
    }

    /// Handles the messages that pass the filter.
    pub fn on<F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        F: Fn(&mut A, &mut Ctx<A>, Arc<T>) + Send + 'static,
    {
        subscribe_multi::<A, T, F>(self.from, Some(self.filter), Kind::Queued(handler))
    }

    /// An insend handler for the messages that pass the filter.
    pub fn insend<F>(self, handler: F) -> Result<&'d mut Define<A>, DefineError>
    where
        F: Fn(&InsendCtx<'_>, Arc<T>) + Send + Sync + 'static,
    {
        subscribe_multi::<A, T, fn(&mut A, &mut Ctx<A>, Arc<T>)>(
            self.from,
            Some(self.filter),
            Kind::Insend(Box::new(handler)),
        )
    }
}

impl<A: Agent> fmt::Debug for InStates<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InStates")
            .field("states", &self.states.as_slice())
            .finish_non_exhaustive()
    }
}
impl<A: Agent> fmt::Debug for FromMulti<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromMulti")
            .field("mbox", &self.mbox)
            .field("states", &self.states)
            .finish_non_exhaustive()
    }
}
impl<A: Agent, T> fmt::Debug for Filtered<'_, A, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filtered")
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

/// What a multi-mbox subscription runs: a queued handler or an insend handler.
enum Kind<F, T> {
    Queued(F),
    Insend(InsendFn<Arc<T>>),
}

fn subscribe_multi<'d, A, T, F>(
    from: FromMulti<'d, A>,
    filter: Option<Arc<crate::mbox::FilterFn<T>>>,
    kind: Kind<F, T>,
) -> Result<&'d mut Define<A>, DefineError>
where
    A: Agent,
    T: Send + Sync + 'static,
    F: Fn(&mut A, &mut Ctx<A>, Arc<T>) + Send + 'static,
{
    let FromMulti {
        def,
        mbox,
        states,
        priority,
    } = from;
    let source = mbox.id();
    let message = std::any::type_name::<T>();
    let type_id = TypeId::of::<T>();
    let position = def
        .multi
        .iter()
        .position(|s| s.mbox.id() == source && s.type_id == type_id);
    let has_insend = position.is_some_and(|p| def.multi[p].options.insend.is_some());
    let has_queued = def.table.subscribes(source, TypeId::of::<Arc<T>>());
    let filter: Option<Arc<dyn Any + Send + Sync>> =
        filter.map(|f| f as Arc<dyn Any + Send + Sync>);
    if let (Some(p), Some(_)) = (position, &filter)
        && def.multi[p].options.filter.is_some()
    {
        return Err(DefineError::DuplicateFilter {
            mbox: source,
            message,
        });
    }
    if let Some(priority) = priority {
        def.declare_event_priority(source, TypeId::of::<Arc<T>>(), message, priority)?;
    }
    let mut insend = None;
    match kind {
        Kind::Queued(handler) => {
            if has_insend {
                return Err(DefineError::InsendConflict {
                    mbox: source,
                    message,
                });
            }
            def.add_handler(source, &states, handler)?;
        }
        Kind::Insend(handler) => {
            if has_insend || has_queued {
                return Err(DefineError::InsendConflict {
                    mbox: source,
                    message,
                });
            }
            insend = Some(Arc::new(handler) as Arc<dyn Any + Send + Sync>);
        }
    }
    match position {
        Some(p) => {
            let options = &mut def.multi[p].options;
            if filter.is_some() {
                options.filter = filter;
            }
            if insend.is_some() {
                options.insend = insend;
            }
        }
        None => def.multi.push(MultiSubscriptionDef {
            mbox,
            type_id,
            options: SubscriberOptions { filter, insend },
        }),
    }
    Ok(def)
}
