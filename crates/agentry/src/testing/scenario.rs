//! Scenarios: steps, each triggered by an impact and completed by agents' reactions.

use super::observer::Event;
use crate::disp::execute::DemandOutcome;
use crate::mbox::Mbox;
use std::any::TypeId;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A sequence of steps run by [`TestEnv::run_scenario`](super::TestEnv::run_scenario).
///
/// Each step runs its *impact* (a closure that sends something, registers a coop, …) when the
/// previous step completes, then completes when its [`Trigger`] has fired — as soon as the
/// demand that fires it has run, before any other demand. Virtual time moves from timer to
/// timer while a step waits. A step fails when its triggers have not fired by its deadline
/// ([`not_after`](StepBuilder::not_after), and in any case the scenario's), or fire before
/// [`not_before`](StepBuilder::not_before); the error names the step and says why.
///
/// ```
/// use agentry::testing::{Scenario, TestEnv, Trigger};
/// use agentry::{Agent, Ctx, Define, DefineError, State};
/// use std::time::Duration;
///
/// struct Light { on: State, off: State }
/// struct Switch;
///
/// impl Agent for Light {
///     fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
///         self.off = def.state("off")?;
///         self.on = def.state("on")?;
///         def.start_in(self.off)?;
///         def.time_limit(self.on, Duration::from_secs(30), self.off)?;
///         def.in_state(self.off).on(|l: &mut Light, ctx: &mut Ctx<Light>, _: Switch| {
///             ctx.change_state(l.on).expect("own state")
///         })?;
///         Ok(())
///     }
/// }
///
/// let mut env = TestEnv::new()?;
/// let light = env
///     .handle()
///     .register_agent(Light { on: State::DEFAULT, off: State::DEFAULT })?;
/// let mut scenario = Scenario::new();
/// scenario
///     .step("switched on")
///     .impact(|| light.send(Switch))
///     .when(Trigger::reacts_to::<Switch>(&light).in_state("on"));
/// scenario
///     .step("switches itself off")
///     .when(Trigger::ends_in(&light, "off"))
///     .not_before(Duration::from_secs(30));
/// let report = env.run_scenario(scenario, Duration::from_secs(60))?;
/// assert_eq!(report.completed_at("switches itself off"), Some(Duration::from_secs(30)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct Scenario<'a> {
    pub(super) steps: Vec<Step<'a>>,
}

pub(super) struct Step<'a> {
    pub(super) name: String,
    pub(super) impact: Option<Box<dyn FnOnce() + 'a>>,
    pub(super) triggers: Vec<Trigger>,
    pub(super) not_before: Option<Duration>,
    pub(super) not_after: Option<Duration>,
}

impl<'a> Scenario<'a> {
    /// An empty scenario.
    pub fn new() -> Self {
        Scenario { steps: Vec::new() }
    }

    /// Adds a step named `name` (the name appears in errors and in the report).
    pub fn step(&mut self, name: impl Into<String>) -> StepBuilder<'_, 'a> {
        self.steps.push(Step {
            name: name.into(),
            impact: None,
            triggers: Vec::new(),
            not_before: None,
            not_after: None,
        });
        let step = self
            .steps
            .last_mut()
            .expect("invariant: a step was just pushed");
        StepBuilder { step }
    }
}

impl fmt::Debug for Scenario<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field(
                "steps",
                &self.steps.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Describes one step of a [`Scenario`].
pub struct StepBuilder<'s, 'a> {
    step: &'s mut Step<'a>,
}

impl<'a> StepBuilder<'_, 'a> {
    /// What the step does when it starts (replaces an earlier impact). A step without one
    /// just waits for its triggers.
    pub fn impact(self, impact: impl FnOnce() + 'a) -> Self {
        self.step.impact = Some(Box::new(impact));
        self
    }

    /// The step completes when `trigger` has fired — and every other trigger given with
    /// `when` (use [`Trigger::any`] for alternatives). A step needs at least one.
    pub fn when(self, trigger: Trigger) -> Self {
        self.step.triggers.push(trigger);
        self
    }

    /// The step fails if it completes earlier than `d` (virtual time) after it started.
    pub fn not_before(self, d: Duration) -> Self {
        self.step.not_before = Some(d);
        self
    }

    /// The step fails if it has not completed `d` (virtual time) after it started.
    pub fn not_after(self, d: Duration) -> Self {
        self.step.not_after = Some(d);
        self
    }
}

impl fmt::Debug for StepBuilder<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepBuilder")
            .field("name", &self.step.name)
            .finish_non_exhaustive()
    }
}

/// What completes a step: an agent's reaction to a message, the state an agent ends in, or a
/// combination. A trigger fires once; it counts only demands run after its step started.
#[derive(Clone, Debug)]
pub struct Trigger(Node);

#[derive(Clone, Debug)]
enum Node {
    Leaf(Leaf),
    All(Vec<Node>),
    Any(Vec<Node>),
}

#[derive(Clone, Debug)]
struct Leaf {
    agent: Mbox,
    what: What,
    state: Option<String>,
}

#[derive(Clone, Debug)]
enum What {
    /// A message of the type (or an `Arc` of it, from a multi mbox) is handled / not.
    Message {
        types: [TypeId; 2],
        name: &'static str,
        handled: bool,
    },
    /// Any demand of the agent (message, time limit, start).
    AnyDemand,
}

impl Trigger {
    /// Fires when the agent behind `agent` *handles* a message of type `M` — sent to its
    /// direct mbox, or an `Arc<M>` from a multi mbox.
    pub fn reacts_to<M: 'static>(agent: &Mbox) -> Trigger {
        Trigger::message::<M>(agent, true)
    }

    /// Fires when a message of type `M` reaches the agent and it has *no handler* for it in
    /// its current state (the message is counted as unhandled).
    pub fn ignores<M: 'static>(agent: &Mbox) -> Trigger {
        Trigger::message::<M>(agent, false)
    }

    fn message<M: 'static>(agent: &Mbox, handled: bool) -> Trigger {
        Trigger(Node::Leaf(Leaf {
            agent: agent.clone(),
            what: What::Message {
                types: [TypeId::of::<M>(), TypeId::of::<Arc<M>>()],
                name: std::any::type_name::<M>(),
                handled,
            },
            state: None,
        }))
    }

    /// Fires when the agent is in the state named `state` after one of its demands (a
    /// message, the expiry of a state's time limit, its start).
    pub fn ends_in(agent: &Mbox, state: &str) -> Trigger {
        Trigger(Node::Leaf(Leaf {
            agent: agent.clone(),
            what: What::AnyDemand,
            state: Some(state.to_owned()),
        }))
    }

    /// Also requires the agent to be in the state named `state` right after the reaction (for
    /// a combination: in each of its triggers).
    pub fn in_state(mut self, state: &str) -> Trigger {
        fn set(node: &mut Node, state: &str) {
            match node {
                Node::Leaf(leaf) => leaf.state = Some(state.to_owned()),
                Node::All(nodes) | Node::Any(nodes) => {
                    nodes.iter_mut().for_each(|n| set(n, state));
                }
            }
        }
        set(&mut self.0, state);
        self
    }

    /// Fires once every one of `triggers` has fired (in any order).
    pub fn all(triggers: impl IntoIterator<Item = Trigger>) -> Trigger {
        Trigger(Node::All(triggers.into_iter().map(|t| t.0).collect()))
    }

    /// Fires as soon as one of `triggers` has fired.
    pub fn any(triggers: impl IntoIterator<Item = Trigger>) -> Trigger {
        Trigger(Node::Any(triggers.into_iter().map(|t| t.0).collect()))
    }
}

/// A trigger being waited for: which of its leaves have fired.
pub(super) struct Pending {
    node: PendingNode,
}

enum PendingNode {
    Leaf(Leaf, bool),
    All(Vec<PendingNode>),
    Any(Vec<PendingNode>),
}

impl Pending {
    /// The triggers of a step, all required; `None` if there is no leaf to wait for.
    pub(super) fn new(triggers: Vec<Trigger>) -> Option<Pending> {
        fn build(node: Node) -> PendingNode {
            match node {
                Node::Leaf(leaf) => PendingNode::Leaf(leaf, false),
                Node::All(nodes) => PendingNode::All(nodes.into_iter().map(build).collect()),
                Node::Any(nodes) => PendingNode::Any(nodes.into_iter().map(build).collect()),
            }
        }
        fn has_leaf(node: &PendingNode) -> bool {
            match node {
                PendingNode::Leaf(..) => true,
                PendingNode::All(nodes) | PendingNode::Any(nodes) => nodes.iter().any(has_leaf),
            }
        }
        let node = PendingNode::All(triggers.into_iter().map(|t| build(t.0)).collect());
        has_leaf(&node).then_some(Pending { node })
    }

    /// Feeds one demand; true once the whole trigger has fired.
    pub(super) fn feed(&mut self, event: &Event) -> bool {
        fn feed(node: &mut PendingNode, event: &Event) -> bool {
            match node {
                PendingNode::Leaf(leaf, fired) => {
                    *fired = *fired || leaf.matches(event);
                    *fired
                }
                // Feed every child (no short-circuit): each latches on its own.
                PendingNode::All(nodes) => {
                    let mut all = true;
                    for n in nodes.iter_mut() {
                        all &= feed(n, event);
                    }
                    all
                }
                PendingNode::Any(nodes) => {
                    let mut any = false;
                    for n in nodes.iter_mut() {
                        any |= feed(n, event);
                    }
                    any
                }
            }
        }
        feed(&mut self.node, event)
    }

    /// The leaves that have not fired yet, described.
    pub(super) fn waiting_for(&self) -> Vec<String> {
        fn collect(node: &PendingNode, out: &mut Vec<String>) {
            match node {
                PendingNode::Leaf(leaf, false) => out.push(leaf.to_string()),
                PendingNode::Leaf(_, true) => {}
                PendingNode::All(nodes) | PendingNode::Any(nodes) => {
                    nodes.iter().for_each(|n| collect(n, out));
                }
            }
        }
        let mut out = Vec::new();
        collect(&self.node, &mut out);
        out
    }
}

impl Leaf {
    fn matches(&self, event: &Event) -> bool {
        if self.agent.agent_id() != Some(event.agent) {
            return false;
        }
        let reacted = match &self.what {
            What::Message { types, handled, .. } => {
                let wanted = if *handled {
                    DemandOutcome::Handled
                } else {
                    DemandOutcome::NoHandler
                };
                event.outcome == wanted && event.message.is_some_and(|(t, _)| types.contains(&t))
            }
            What::AnyDemand => matches!(
                event.outcome,
                DemandOutcome::Started | DemandOutcome::Handled | DemandOutcome::NoHandler
            ),
        };
        reacted
            && self
                .state
                .as_deref()
                .is_none_or(|s| event.state.as_deref() == Some(s))
    }
}

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agent = self.agent.shared().agent_type();
        match &self.what {
            What::Message {
                name,
                handled: true,
                ..
            } => write!(f, "{agent} ({}) reacts to {name}", self.agent.id())?,
            What::Message {
                name,
                handled: false,
                ..
            } => write!(f, "{agent} ({}) ignores {name}", self.agent.id())?,
            What::AnyDemand => write!(f, "{agent} ({}) runs a demand", self.agent.id())?,
        }
        match &self.state {
            Some(state) => write!(f, " and ends in `{state}`"),
            None => Ok(()),
        }
    }
}

/// When each step of a scenario completed (virtual time since the test environment was
/// created).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScenarioReport {
    /// The steps, in order.
    pub steps: Vec<StepReport>,
}

/// One completed step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepReport {
    /// The step's name.
    pub name: String,
    /// When it started (its impact ran).
    pub started: Duration,
    /// When its triggers had all fired.
    pub completed: Duration,
}

impl ScenarioReport {
    /// When the (first) step named `name` completed.
    pub fn completed_at(&self, name: &str) -> Option<Duration> {
        self.steps
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.completed)
    }
}
