//! Coops (cooperations): agents registered and deregistered as one unit.
//!
//! - Registration is transactional: every agent is defined and bound, then all are published
//!   at once; if any step fails nothing is registered and the error says which agent failed
//!   and why.
//! - Coops form a tree. Deregistering a coop deregisters its children first; a coop's agents
//!   keep running until all its children are gone, then each receives its finish demand.
//! - Queued messages: a deregistered agent stops accepting messages when it is told to
//!   finish; messages queued before its finish demand are still handled; messages sent after
//!   are refused, and any that race past are discarded when handled — both counted as dead
//!   letters.
//! - Each agent's `on_finish` runs exactly once; listeners learn of the deregistration and its
//!   reason after every agent of the coop has been dropped.
//! - A coop may supervise ([`Coop::supervise`]): agents added with a factory
//!   ([`Coop::add_supervised`]) and child coops added with a factory
//!   ([`Coop::add_supervised_coop`]) are restarted when they fail (`supervision.rs`).

pub(crate) mod registry;
pub(crate) mod start;
mod table;

use crate::agent::Addr;
use crate::agent::Agent;
use crate::agent::cell::UndefinedAgent;
use crate::agent::define::DefinitionCheck;
use crate::agent::protocol::Protocol;
use crate::agent::restart::SupervisedAgent;
use crate::disp::Binder;
use crate::ids::CoopId;
use crate::mbox::class::AgentClass;
use crate::mbox::direct::{AgentHost, AgentShared};
use crate::mbox::{Mbox, MultiMbox};
use crate::panic_reaction::PanicReaction;
use crate::reason::DeregReason;
use crate::supervision::Supervision;
use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

/// Sent to the mboxes registered with [`Coop::notify_on_dereg`] once the coop is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoopDeregistered {
    /// The coop.
    pub coop: CoopId,
    /// Why it was deregistered.
    pub reason: DeregReason,
}

pub(crate) enum DeregListener {
    Mbox(Mbox),
    Multi(MultiMbox),
    Callback(Box<dyn FnOnce(CoopDeregistered) + Send>),
}

impl DeregListener {
    pub(crate) fn notify(self, event: CoopDeregistered) {
        match self {
            DeregListener::Mbox(m) => m.send(event),
            DeregListener::Multi(m) => m.send(event),
            DeregListener::Callback(f) => {
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(event))).is_err() {
                    tracing::error!(coop = %event.coop, "deregistration callback panicked");
                }
            }
        }
    }
}

/// An agent added to a coop, not defined yet. Kept small: a coop of 10^6 agents holds 10^6 of
/// them until it registers (their binders, which few agents have, are kept apart:
/// [`Coop::own_binders`]).
pub(crate) struct PendingAgent {
    pub(crate) shared: Arc<AgentShared>,
    pub(crate) agent: UndefinedAgent,
}

// Every agent of a coop has one until the coop registers.
const _: () = assert!(std::mem::size_of::<PendingAgent>() <= 48);

/// Room a coop's list of agents makes at its first agent: a child coop of a handful or ten
/// agents (a tree of workers, skynet's) grows it no further, where starting from `Vec`'s
/// four would reallocate it twice. It lives until the registration (768 bytes).
const FIRST_CAPACITY: usize = 16;

/// A coop being assembled; register it with
/// [`EnvHandle::register_coop`](crate::EnvHandle::register_coop).
///
/// ```
/// use agentry::{UserError, Agent, Ctx, Define, DefineError, Env, Mbox};
///
/// struct Ping(Mbox);
/// struct Pong;
/// /// A ball and where to return it.
/// struct Ball(u32, Mbox);
///
/// impl Agent for Ping {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|ping: &mut Ping, ctx: &mut Ctx<Ping>, Ball(n, _): Ball| {
///             if n == 3 {
///                 ctx.stop_env()
///             } else {
///                 ping.0.send(Ball(n + 1, ctx.mbox().clone()))
///             }
///         })?;
///         Ok(())
///     }
///     fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
///         self.0.send(Ball(0, ctx.mbox().clone()));
///         Ok(())
///     }
/// }
/// impl Agent for Pong {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         def.on(|_: &mut Pong, ctx: &mut Ctx<Pong>, Ball(n, back): Ball| {
///             back.send(Ball(n, ctx.mbox().clone()))
///         })?;
///         Ok(())
///     }
/// }
///
/// let env = Env::new().expect("env");
/// let mut coop = env.handle().new_coop();
/// let pong = coop.add(Pong);
/// coop.add(Ping(pong));
/// env.handle().register_coop(coop).expect("registered");
/// env.run();
/// ```
pub struct Coop {
    /// The env it was made by (only that env registers it).
    pub(crate) env: Arc<dyn AgentHost>,
    pub(crate) parent: Option<CoopId>,
    pub(crate) binder: Option<Binder>,
    pub(crate) panic_reaction: Option<PanicReaction>,
    pub(crate) agents: Vec<PendingAgent>,
    /// The binders of the agents added with one of their own (`add_with`, …), by their index
    /// in `agents`, in increasing order.
    pub(crate) own_binders: Vec<(usize, Binder)>,
    pub(crate) listeners: Vec<DeregListener>,
    pub(crate) supervision: Option<Supervision>,
    /// Supervised children, in the order they were added.
    pub(crate) children: Vec<ChildSpec>,
    /// The class of the agent type added last (`mbox/class.rs`: adding agents of one type
    /// reads the env's classes once).
    pub(crate) last_class: Option<Arc<AgentClass>>,
}

impl Coop {
    pub(crate) fn new(env: Arc<dyn AgentHost>) -> Self {
        Coop {
            env,
            parent: None,
            binder: None,
            panic_reaction: None,
            agents: Vec::new(),
            own_binders: Vec::new(),
            listeners: Vec::new(),
            supervision: None,
            children: Vec::new(),
            last_class: None,
        }
    }

    /// Adds an agent, bound to the coop's binder (or the environment's default dispatcher).
    /// Returns its direct mbox, usable right away for wiring — to give to siblings, to
    /// subscribe, to keep — but not yet for sending: until the coop is registered the agent
    /// has no id ([`Mbox::agent_id`] is `None`: its slot and generation are chosen when the
    /// coop commits) and sends are refused (`SendError::AgentGone`, counted as dead letters).
    /// If the registration fails before the commit (a `define` or binding error), the mbox
    /// stays that way.
    pub fn add<A: Agent>(&mut self, agent: A) -> Mbox {
        self.push(agent, None)
    }

    /// Adds an agent bound through `binder`.
    pub fn add_with<A: Agent>(&mut self, agent: A, binder: &Binder) -> Mbox {
        self.push(agent, Some(binder.clone()))
    }

    /// [`add`](Self::add), returning the agent's typed address: sends through it compile only
    /// for the message types of its [`Protocol`], and the registration fails
    /// ([`DefineError::UnhandledProtocolMessage`](crate::DefineError::UnhandledProtocolMessage))
    /// if its definition subscribes no handler for one of them (see
    /// [`protocol`](crate::protocol)).
    pub fn add_addr<A: Protocol>(&mut self, agent: A) -> Addr<A> {
        self.push_declared(agent, None)
    }

    /// [`add_addr`](Self::add_addr), bound through `binder`.
    pub fn add_addr_with<A: Protocol>(&mut self, agent: A, binder: &Binder) -> Addr<A> {
        self.push_declared(agent, Some(binder.clone()))
    }

    fn push<A: Agent>(&mut self, agent: A, binder: Option<Binder>) -> Mbox {
        self.push_erased::<A>(UndefinedAgent::new(agent), binder)
    }

    fn push_declared<A: Protocol>(&mut self, agent: A, binder: Option<Binder>) -> Addr<A> {
        let agent = UndefinedAgent::declared(agent);
        Addr::new(self.push_erased::<A>(agent, binder))
    }

    /// Adds `agent`, an agent of type `A` (its class is `A`'s).
    fn push_erased<A: 'static>(&mut self, agent: UndefinedAgent, binder: Option<Binder>) -> Mbox {
        let class = match &self.last_class {
            Some(class) if class.type_id == TypeId::of::<A>() => Arc::clone(class),
            _ => {
                let class = self
                    .env
                    .agent_classes()
                    .of::<A>(std::any::type_name::<A>(), &self.env);
                self.last_class = Some(Arc::clone(&class));
                class
            }
        };
        let shared = Arc::new(AgentShared::new(class));
        let mbox = Mbox::from_shared(Arc::clone(&shared));
        if let Some(binder) = binder {
            self.own_binders.push((self.agents.len(), binder));
        }
        if self.agents.capacity() == 0 {
            self.agents.reserve_exact(FIRST_CAPACITY);
        }
        self.agents.push(PendingAgent { shared, agent });
        mbox
    }

    /// Makes this coop a supervisor: its supervised children (agents added with
    /// [`add_supervised`](Self::add_supervised), child coops added with
    /// [`add_supervised_coop`](Self::add_supervised_coop)) are restarted by `policy` when they
    /// fail. The policy is checked when the coop is registered. See [`Supervision`].
    pub fn supervise(&mut self, policy: Supervision) -> &mut Self {
        self.supervision = Some(policy);
        self
    }

    /// Adds a supervised agent made by `factory` (called now for the first incarnation, and
    /// again by the supervisor for each restart). Its panic reaction is
    /// [`PanicReaction::Supervise`] unless its definition sets another. The returned mbox
    /// stays the agent's across restarts. The coop must [`supervise`](Self::supervise).
    pub fn add_supervised<A: Agent>(
        &mut self,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Mbox {
        self.push_supervised(factory, None, DefinitionCheck::Unchecked)
    }

    /// [`add_supervised`](Self::add_supervised), bound through `binder`.
    pub fn add_supervised_with<A: Agent>(
        &mut self,
        factory: impl FnMut() -> A + Send + 'static,
        binder: &Binder,
    ) -> Mbox {
        self.push_supervised(factory, Some(binder.clone()), DefinitionCheck::Unchecked)
    }

    /// [`add_supervised`](Self::add_supervised), returning the agent's typed address (see
    /// [`add_addr`](Self::add_addr)). Every incarnation's definition is checked against the
    /// protocol: the first one's at registration, a later one's at its restart (a definition
    /// that does not handle the protocol fails that start, as a changed insend handler does).
    pub fn add_supervised_addr<A: Protocol>(
        &mut self,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A> {
        Addr::new(self.push_supervised(factory, None, DefinitionCheck::protocol()))
    }

    /// [`add_supervised_addr`](Self::add_supervised_addr), bound through `binder`.
    pub fn add_supervised_addr_with<A: Protocol>(
        &mut self,
        factory: impl FnMut() -> A + Send + 'static,
        binder: &Binder,
    ) -> Addr<A> {
        Addr::new(self.push_supervised(factory, Some(binder.clone()), DefinitionCheck::protocol()))
    }

    fn push_supervised<A: Agent>(
        &mut self,
        factory: impl FnMut() -> A + Send + 'static,
        binder: Option<Binder>,
        check: DefinitionCheck<A>,
    ) -> Mbox {
        let agent = SupervisedAgent::new(factory, check);
        let mbox = self.push_erased::<A>(agent.undefined(), binder);
        self.children.push(ChildSpec::Agent(self.agents.len() - 1));
        mbox
    }

    /// Adds a supervised child coop: once this coop is registered, its supervisor makes a coop
    /// (a child of this one), lets `factory` fill it, and registers it — again for each
    /// restart (the new coop has a new [`CoopId`]). The child fails when it is deregistered
    /// with [`DeregReason::Panic`], [`DeregReason::Escalation`] or [`DeregReason::Restart`];
    /// deregistered with `Normal` or `User`, it is done and not restarted. The coop must
    /// [`supervise`](Self::supervise).
    pub fn add_supervised_coop(
        &mut self,
        factory: impl FnMut(&mut Coop) + Send + 'static,
    ) -> &mut Self {
        self.children.push(ChildSpec::Coop(Box::new(factory)));
        self
    }

    /// Makes this coop a child of `parent`.
    pub fn set_parent(&mut self, parent: CoopId) -> &mut Self {
        self.parent = Some(parent);
        self
    }

    /// The binder for agents added without one.
    pub fn set_binder(&mut self, binder: &Binder) -> &mut Self {
        self.binder = Some(binder.clone());
        self
    }

    /// The panic reaction of agents that do not set their own (default: the parent coop's,
    /// else the environment's).
    pub fn set_panic_reaction(&mut self, reaction: PanicReaction) -> &mut Self {
        self.panic_reaction = Some(reaction);
        self
    }

    /// Sends [`CoopDeregistered`] to `mbox` when the coop is gone.
    pub fn notify_on_dereg(&mut self, mbox: &Mbox) -> &mut Self {
        self.listeners.push(DeregListener::Mbox(mbox.clone()));
        self
    }

    /// Sends [`CoopDeregistered`] to the multi mbox `mbox` when the coop is gone.
    pub fn notify_multi_on_dereg(&mut self, mbox: &MultiMbox) -> &mut Self {
        self.listeners.push(DeregListener::Multi(mbox.clone()));
        self
    }

    /// Calls `f` (on the thread that drops the coop's last agent) when the coop is gone.
    pub fn on_dereg(&mut self, f: impl FnOnce(CoopDeregistered) + Send + 'static) -> &mut Self {
        self.listeners.push(DeregListener::Callback(Box::new(f)));
        self
    }

    /// Number of agents added.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// True if no agent was added.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

impl fmt::Debug for Coop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coop")
            .field("parent", &self.parent)
            .field(
                "agents",
                &self
                    .agents
                    .iter()
                    .map(|a| a.shared.agent_type())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A supervised child as added to a coop.
pub(crate) enum ChildSpec {
    /// The agent at this index of the coop's agents.
    Agent(usize),
    /// A child coop's factory.
    Coop(CoopFactory),
}

pub(crate) type CoopFactory = Box<dyn FnMut(&mut Coop) + Send>;
