//! Supervision across nodes: a supervised child coop of the **local** supervisor stands for
//! a child agent started on **another** node from a factory.
//!
//! # Ground rules
//!
//! - [`remote_child`] gives a coop factory for
//!   [`Coop::add_supervised_coop`](agentry::Coop::add_supervised_coop). Each incarnation of
//!   that child coop holds one [`RemoteChild`] agent which, in `on_start`, picks a node
//!   (placement below), spawns the remote child there ([`Cluster::spawn`]) and watches it
//!   ([`Cluster::watch`]). A failed spawn fails the start (`StartFailed`). The spawn is a
//!   blocking request (at most the cluster's timeout) on the thread of the stand-in's
//!   dispatcher: bind the supervising coop to a dispatcher where that wait harms nobody.
//! - When the remote child is gone, the local child coop ends the way the remote one did:
//!   `Exited(Normal)` / `Exited(User)` → deregistered `Normal` (done, not restarted);
//!   anything else — it panicked, its node went down, it is unknown — → deregistered
//!   `Escalation`, a failure. So the **existing** supervisor applies its strategy
//!   (one-for-one, all-for-one, rest-for-one), restart intensity and backoff unchanged.
//! - When the local child coop leaves while its remote child still runs (a restart by the
//!   strategy, or the supervisor's coop leaving), `on_finish` asks the remote node to stop
//!   it ([`Cluster::stop_remote`]).
//! - Placement: among the live nodes (this one included) whose heartbeats offer the
//!   factory, in the order of [`RemoteChildSpec::nodes`] (a preference list) or else by id:
//!   the node of the previous incarnation if it is still live, else the next live one after
//!   it in that order (wrapping), else the first.

use crate::cluster::Cluster;
use crate::error::SpawnError;
use crate::event::{RemoteExit, RemoteTerminated};
use crate::node::AgentRef;
use agentry::{Agent, Coop, Ctx, Define, DefineError, DeregReason, UserError, watch::ExitReason};
use std::sync::{Arc, Mutex};

/// What to start remotely, and where it may run.
#[derive(Debug, Clone)]
pub struct RemoteChildSpec {
    /// The factory name.
    pub factory: String,
    /// Its arguments.
    pub args: Vec<u8>,
    /// The node ids it may run on, in order of preference (empty: any node offering the
    /// factory, by id).
    pub nodes: Vec<String>,
}

impl RemoteChildSpec {
    /// Factory `factory` with `args`, on any node offering it.
    pub fn new(factory: &str, args: &[u8]) -> Self {
        RemoteChildSpec {
            factory: factory.to_owned(),
            args: args.to_vec(),
            nodes: Vec::new(),
        }
    }
}

/// Where the remote child currently runs (shared with every incarnation of its local
/// stand-in): read it to address the child.
#[derive(Debug, Clone, Default)]
pub struct RemoteChildHandle {
    current: Arc<Mutex<Option<AgentRef>>>,
    history: Arc<Mutex<Vec<AgentRef>>>,
}

impl RemoteChildHandle {
    /// The running remote child, if any.
    pub fn current(&self) -> Option<AgentRef> {
        self.current
            .lock()
            .expect("invariant: no panic under this lock")
            .clone()
    }

    /// Every remote child started so far, in order.
    pub fn history(&self) -> Vec<AgentRef> {
        self.history
            .lock()
            .expect("invariant: no panic under this lock")
            .clone()
    }
}

/// A coop factory for `Coop::add_supervised_coop` whose child runs on another node (see
/// the module's ground rules), and the handle that tells where it runs.
pub fn remote_child(
    cluster: &Cluster,
    spec: RemoteChildSpec,
) -> (impl FnMut(&mut Coop) + Send + 'static, RemoteChildHandle) {
    let handle = RemoteChildHandle::default();
    let cluster = cluster.clone();
    let h = handle.clone();
    let factory = move |coop: &mut Coop| {
        coop.add(RemoteChild {
            cluster: cluster.clone(),
            spec: spec.clone(),
            handle: h.clone(),
            child: None,
        });
    };
    (factory, handle)
}

/// The local stand-in of a remote child (see the module's ground rules).
#[derive(Debug)]
pub struct RemoteChild {
    cluster: Cluster,
    spec: RemoteChildSpec,
    handle: RemoteChildHandle,
    child: Option<AgentRef>,
}

impl RemoteChild {
    fn place(&self) -> Result<String, SpawnError> {
        let me = self.cluster.me();
        let offering: Vec<String> = self
            .cluster
            .members()
            .into_iter()
            .chain(std::iter::once(me))
            .filter(|n| n.factories.contains(&self.spec.factory))
            .map(|n| n.id)
            .collect();
        // The preference list in its order, or every node offering the factory by id.
        let order: Vec<String> = if self.spec.nodes.is_empty() {
            let mut all = offering.clone();
            all.sort();
            all
        } else {
            self.spec.nodes.clone()
        };
        let candidates: Vec<&String> = order.iter().filter(|n| offering.contains(n)).collect();
        let previous = self.handle.history().last().map(|r| r.node.id.clone());
        let pick = match previous.and_then(|p| order.iter().position(|n| *n == p)) {
            Some(i) => (0..order.len())
                .map(|k| &order[(i + k) % order.len()])
                .find(|n| offering.contains(n)),
            None => candidates.first().copied(),
        };
        pick.cloned()
            .ok_or_else(|| SpawnError::NoPlacement(self.spec.factory.clone()))
    }

    fn on_terminated(&mut self, ctx: &mut Ctx<Self>, t: RemoteTerminated) {
        if self.child.as_ref() != Some(&t.target) {
            return;
        }
        self.child = None;
        *self
            .handle
            .current
            .lock()
            .expect("invariant: no panic under this lock") = None;
        let reason = match t.reason {
            RemoteExit::Exited(ExitReason::Normal) => DeregReason::Normal,
            RemoteExit::Exited(ExitReason::User(c)) => DeregReason::User(c),
            _ => DeregReason::Escalation,
        };
        ctx.deregister_coop(reason);
    }
}

impl Agent for RemoteChild {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(RemoteChild::on_terminated)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let node = self.place().map_err(UserError::new)?;
        let child = self
            .cluster
            .spawn(&node, &self.spec.factory, &self.spec.args)
            .map_err(UserError::new)?;
        self.cluster.watch(ctx.mbox(), &child);
        *self
            .handle
            .current
            .lock()
            .expect("invariant: no panic under this lock") = Some(child.clone());
        self.handle
            .history
            .lock()
            .expect("invariant: no panic under this lock")
            .push(child.clone());
        self.child = Some(child);
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        if let Some(child) = self.child.take() {
            self.cluster.stop_remote(&child);
            *self
                .handle
                .current
                .lock()
                .expect("invariant: no panic under this lock") = None;
        }
    }
}
