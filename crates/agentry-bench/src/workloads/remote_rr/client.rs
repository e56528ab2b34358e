//! The client agent of the agent paths: groups of K outstanding requests through a
//! [`RemoteMbox`], every reply matched to its request by id and compared with it.

use super::payload::{DISTINCT, Payload, record};
use super::{RrResult, RrSpec};
use crate::harness::BenchError;
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, EnvHandle, UserError};
use agentry_remote::{RemoteMbox, RemoteReply, RequestId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one request may wait for its reply.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the client reports when it is done.
struct Outcome {
    answered: u64,
    failures: u64,
    first_failure: Option<String>,
    elapsed: Duration,
}

/// The client agent: groups of K outstanding requests until `total` are answered.
struct RrClient<M> {
    target: RemoteMbox,
    k: usize,
    total: u64,
    sent: u64,
    records: Vec<Vec<u8>>,
    /// Request id → index of the record it carries.
    pending: HashMap<RequestId, usize>,
    answered: u64,
    failures: u64,
    first_failure: Option<String>,
    started: Instant,
    deadline: Instant,
    done: mpsc::Sender<Outcome>,
    _message: PhantomData<fn(M)>,
}

impl<M: Payload> RrClient<M> {
    fn fail(&mut self, why: String) {
        self.failures += 1;
        self.first_failure.get_or_insert(why);
    }

    fn send_group(&mut self, ctx: &mut Ctx<Self>) {
        for _ in 0..self.k {
            let index = (self.sent % self.records.len() as u64) as usize;
            let query = M::wrap(self.records[index].clone());
            match self
                .target
                .send_request::<M, M>(query, REQUEST_TIMEOUT, ctx.mbox())
            {
                Ok(id) => {
                    self.pending.insert(id, index);
                }
                Err(e) => self.fail(format!("request {} refused: {e}", self.sent)),
            }
            self.sent += 1;
        }
        if self.pending.is_empty() {
            self.finish();
        }
    }

    fn on_reply(&mut self, ctx: &mut Ctx<Self>, reply: RemoteReply<M>) {
        match (self.pending.remove(&reply.id), reply.result) {
            (None, _) => self.fail(format!("a reply to an unknown request {:?}", reply.id)),
            (Some(_), Err(e)) => self.fail(format!("a request failed: {e}")),
            (Some(index), Ok(echo)) if echo.bytes() == self.records[index].as_slice() => {
                self.answered += 1;
            }
            (Some(index), Ok(_)) => self.fail(format!("the echo of record {index} differs")),
        }
        if self.pending.is_empty() {
            if self.sent >= self.total || Instant::now() > self.deadline || self.failures > 0 {
                self.finish();
            } else {
                self.send_group(ctx);
            }
        }
    }

    fn finish(&mut self) {
        // The receiver gone means the caller gave up already.
        let _ = self.done.send(Outcome {
            answered: self.answered,
            failures: self.failures,
            first_failure: self.first_failure.take(),
            elapsed: self.started.elapsed(),
        });
    }
}

impl<M: Payload> Agent for RrClient<M> {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Self::on_reply)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.started = Instant::now();
        self.send_group(ctx);
        Ok(())
    }
}

/// Runs one agent cell against `target` (a served echo of message type `M`).
pub(crate) fn run_agent<M: Payload>(
    h: &EnvHandle,
    target: &RemoteMbox,
    spec: &RrSpec,
) -> Result<RrResult, BenchError> {
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    coop.add(RrClient::<M> {
        target: target.clone(),
        k: spec.k.max(1),
        total: spec.expected(),
        sent: 0,
        records: (0..DISTINCT as u64).map(record).collect(),
        pending: HashMap::new(),
        answered: 0,
        failures: 0,
        first_failure: None,
        started: Instant::now(),
        deadline: Instant::now() + spec.limit,
        done: tx,
        _message: PhantomData,
    });
    let id = h
        .register_coop(coop)
        .map_err(|e| BenchError::Harness(format!("client agent: {e}")))?;
    let wait = spec.limit + REQUEST_TIMEOUT + Duration::from_secs(5);
    let outcome = rx.recv_timeout(wait);
    // Deregistering a coop that is already gone fails harmlessly.
    let _ = h.deregister_coop(id, DeregReason::Normal);
    let outcome = outcome
        .map_err(|_| BenchError::Harness(format!("the cell did not finish within {wait:?}")))?;
    if outcome.failures > 0 {
        return Err(BenchError::Verify(format!(
            "{} of {} replies failed or differed; first: {}",
            outcome.failures,
            outcome.answered + outcome.failures,
            outcome.first_failure.unwrap_or_default()
        )));
    }
    Ok(RrResult {
        requests: outcome.answered,
        elapsed: outcome.elapsed,
    })
}
