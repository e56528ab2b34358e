//! Agent states: a tree of named states, each with optional on_enter / on_exit hooks and an
//! optional initial substate.
//!
//! The tree is plain data — names, parents, time limits and the *indices* of the hooks, which
//! each agent keeps in its cell's extras (`agent/cell.rs`) — so that every agent whose
//! definition produced the same tree can share one (`agent/layout.rs`).
//!
//! Every agent starts in [`State::DEFAULT`] unless its definition says otherwise. Top-level
//! states are siblings of the default state; a substate inherits the handlers of its ancestors
//! unless it subscribes its own (see `handlers.rs`).

use super::Ctx;
use crate::error::{DefineError, HookKind};
use std::borrow::Cow;
use std::time::Duration;

/// Handle of one state of an agent. Cheap to copy; meaningful only for the agent whose
/// definition created it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct State(pub(crate) u16);

impl State {
    /// The state every agent is in when it starts, unless its definition chose another.
    pub const DEFAULT: State = State(0);

    pub(crate) fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A state hook: `fn(&mut Agent, &mut Ctx<Agent>)`.
pub(crate) type Hook<A> = Box<dyn Fn(&mut A, &mut Ctx<A>) + Send>;

#[derive(PartialEq, Clone)]
struct Node {
    name: Cow<'static, str>,
    parent: Option<State>,
    depth: u16,
    initial_substate: Option<State>,
    time_limit: Option<(Duration, State)>,
    /// Index of the on_enter hook in the agent's hooks.
    on_enter: Option<u32>,
    /// Index of the on_exit hook in the agent's hooks.
    on_exit: Option<u32>,
}

/// The tree of an agent that declared no state and no hook: its default state alone.
static DEFAULT_ONLY: [Node; 1] = [Node {
    name: Cow::Borrowed("default"),
    parent: None,
    depth: 0,
    initial_substate: None,
    time_limit: None,
    on_enter: None,
    on_exit: None,
}];

/// All states of one agent. The default state alone (most agents) is [`DEFAULT_ONLY`], not
/// stored: a definition that declares no state allocates nothing for its tree.
pub(crate) struct StateTree {
    /// Every state, the default first; empty while the default is the only one and has no
    /// hook (read through [`nodes`](Self::nodes)).
    nodes: Vec<Node>,
    /// True once any state has a hook, an initial substate or a time limit: transitions must
    /// then walk the tree; otherwise a transition only switches the state index.
    structured: bool,
}

/// Equal if the states are (whether the default alone is stored or not). Two trees of the
/// default alone (most agents: every registration compares its tree with its class's) are
/// equal without comparing nodes.
impl PartialEq for StateTree {
    fn eq(&self, other: &StateTree) -> bool {
        self.structured == other.structured
            && ((self.nodes.is_empty() && other.nodes.is_empty()) || self.nodes() == other.nodes())
    }
}

/// The hooks to run for one transition, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Transition {
    /// States left, innermost first.
    pub(crate) exits: Vec<State>,
    /// States entered, outermost first.
    pub(crate) enters: Vec<State>,
    /// The state the agent ends in (after following initial substates).
    pub(crate) target: State,
}

impl StateTree {
    pub(crate) fn new() -> Self {
        StateTree {
            nodes: Vec::new(),
            structured: false,
        }
    }

    /// Every state, the default first.
    fn nodes(&self) -> &[Node] {
        if self.nodes.is_empty() {
            &DEFAULT_ONLY
        } else {
            &self.nodes
        }
    }

    /// Every state, stored (the default is stored on the first change).
    fn nodes_mut(&mut self) -> &mut Vec<Node> {
        if self.nodes.is_empty() {
            self.nodes.extend(DEFAULT_ONLY.iter().map(Node::clone));
        }
        &mut self.nodes
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes().len()
    }

    pub(crate) fn contains(&self, s: State) -> bool {
        s.index() < self.len()
    }

    pub(crate) fn check(&self, s: State) -> Result<(), DefineError> {
        if self.contains(s) {
            Ok(())
        } else {
            Err(DefineError::UnknownState(s.0))
        }
    }

    pub(crate) fn add(
        &mut self,
        name: Cow<'static, str>,
        parent: Option<State>,
    ) -> Result<State, DefineError> {
        if let Some(p) = parent {
            self.check(p)?;
        }
        let index = u16::try_from(self.len()).map_err(|_| DefineError::TooManyStates)?;
        let depth = parent.map_or(0, |p| self.nodes()[p.index()].depth + 1);
        self.nodes_mut().push(Node {
            name,
            parent,
            depth,
            initial_substate: None,
            time_limit: None,
            on_enter: None,
            on_exit: None,
        });
        Ok(State(index))
    }

    pub(crate) fn name(&self, s: State) -> &str {
        self.nodes().get(s.index()).map_or("<unknown>", |n| &n.name)
    }

    /// The state named `name` (the first one so named, if the definition reused a name).
    pub(crate) fn named(&self, name: &str) -> Option<State> {
        let index = self.nodes().iter().position(|n| n.name == name)?;
        Some(State(u16::try_from(index).ok()?))
    }

    pub(crate) fn parent(&self, s: State) -> Option<State> {
        self.nodes()[s.index()].parent
    }

    pub(crate) fn set_initial_substate(
        &mut self,
        parent: State,
        child: State,
    ) -> Result<(), DefineError> {
        self.check(parent)?;
        self.check(child)?;
        if self.nodes()[child.index()].parent != Some(parent) {
            return Err(DefineError::NotASubstate {
                parent: self.name(parent).to_owned(),
                child: self.name(child).to_owned(),
            });
        }
        self.nodes_mut()[parent.index()].initial_substate = Some(child);
        self.structured = true;
        Ok(())
    }

    /// `hook`: its index in the agent's hooks.
    pub(crate) fn set_on_enter(&mut self, s: State, hook: u32) -> Result<(), DefineError> {
        self.check(s)?;
        let node = &mut self.nodes_mut()[s.index()];
        if node.on_enter.is_some() {
            return Err(DefineError::DuplicateHook {
                hook: HookKind::Enter,
                state: node.name.to_string(),
            });
        }
        node.on_enter = Some(hook);
        self.structured = true;
        Ok(())
    }

    /// `hook`: its index in the agent's hooks.
    pub(crate) fn set_on_exit(&mut self, s: State, hook: u32) -> Result<(), DefineError> {
        self.check(s)?;
        let node = &mut self.nodes_mut()[s.index()];
        if node.on_exit.is_some() {
            return Err(DefineError::DuplicateHook {
                hook: HookKind::Exit,
                state: node.name.to_string(),
            });
        }
        node.on_exit = Some(hook);
        self.structured = true;
        Ok(())
    }

    /// After `limit` in `state` (counted from entering it, substates included), the agent
    /// switches to `then`.
    pub(crate) fn set_time_limit(
        &mut self,
        state: State,
        limit: Duration,
        then: State,
    ) -> Result<(), DefineError> {
        self.check(state)?;
        self.check(then)?;
        let node = &mut self.nodes_mut()[state.index()];
        if node.time_limit.is_some() {
            return Err(DefineError::DuplicateTimeLimit(node.name.to_string()));
        }
        node.time_limit = Some((limit, then));
        self.structured = true;
        Ok(())
    }

    pub(crate) fn time_limit(&self, s: State) -> Option<(Duration, State)> {
        self.nodes()[s.index()].time_limit
    }

    /// True if any state has a time limit.
    pub(crate) fn has_time_limits(&self) -> bool {
        self.nodes().iter().any(|n| n.time_limit.is_some())
    }

    /// False if no state has a hook, an initial substate or a time limit (transitions are a
    /// plain switch).
    pub(crate) fn is_structured(&self) -> bool {
        self.structured
    }

    /// The index of `s`'s on_enter hook in the agent's hooks.
    pub(crate) fn on_enter(&self, s: State) -> Option<usize> {
        self.nodes()[s.index()].on_enter.map(|i| i as usize)
    }

    /// The index of `s`'s on_exit hook in the agent's hooks.
    pub(crate) fn on_exit(&self, s: State) -> Option<usize> {
        self.nodes()[s.index()].on_exit.map(|i| i as usize)
    }

    /// `s` followed by its ancestors up to the root.
    pub(crate) fn self_and_ancestors(&self, s: State) -> impl Iterator<Item = State> + '_ {
        std::iter::successors(Some(s), |&x| self.parent(x))
    }

    /// Follows initial substates down from `s`.
    pub(crate) fn settle(&self, mut s: State) -> State {
        while let Some(child) = self.nodes()[s.index()].initial_substate {
            s = child;
        }
        s
    }

    /// The exits and enters that take the agent from `from` to `to` (then down `to`'s initial
    /// substates). A transition to the current state does nothing.
    pub(crate) fn transition(&self, from: State, to: State) -> Transition {
        let target = self.settle(to);
        if target == from {
            return Transition {
                exits: Vec::new(),
                enters: Vec::new(),
                target,
            };
        }
        let (mut a, mut b) = (Some(from), Some(target));
        let mut exits = Vec::new();
        let mut enters = Vec::new();
        // Walk both sides up to equal depth, then together, until they meet (or both leave
        // the tree: the states are in different top-level subtrees).
        let depth =
            |s: Option<State>| s.map_or(-1i32, |s| i32::from(self.nodes()[s.index()].depth));
        while depth(a) > depth(b) {
            let s = a.expect("invariant: deeper side is a state");
            exits.push(s);
            a = self.parent(s);
        }
        while depth(b) > depth(a) {
            let s = b.expect("invariant: deeper side is a state");
            enters.push(s);
            b = self.parent(s);
        }
        while a != b {
            let (sa, sb) = (
                a.expect("invariant: equal depth"),
                b.expect("invariant: equal depth"),
            );
            exits.push(sa);
            enters.push(sb);
            a = self.parent(sa);
            b = self.parent(sb);
        }
        enters.reverse();
        Transition {
            exits,
            enters,
            target,
        }
    }

    /// The path entered when the agent starts in `initial`: root first.
    pub(crate) fn entry_path(&self, initial: State) -> Transition {
        let target = self.settle(initial);
        let mut enters: Vec<State> = self.self_and_ancestors(target).collect();
        enters.reverse();
        Transition {
            exits: Vec::new(),
            enters,
            target,
        }
    }
}

#[cfg(test)]
mod tests;
