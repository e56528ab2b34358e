//! `state_change` (SObjectizer 4.4 b3): one agent with 10 states and one handler per state;
//! it sends N messages to itself, then handles them, each handled message switching it to the
//! next state (10 → 1 cyclic). Measures send and state-dependent dispatch.

use super::support::{SendThenProcess, Tally, env, run, setup};
use crate::harness::{BenchDef, Case, ChartKind, PhaseSpec, Sample, Scale, verify_eq};
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, State, UserError};

pub static BENCH: BenchDef = BenchDef {
    id: "state_change",
    description: "one agent, 10 states, one handler per state; each handled message switches to the next state",
    cases,
    charts: &[ChartKind::Bars],
};

const STATES: usize = 10;

struct Msg;

struct Cycler {
    n: u64,
    states: Vec<State>,
    handled: u64,
    visits: [u64; STATES],
    clock: SendThenProcess,
    last_state: Tally,
    fair: Tally,
}

impl Agent for Cycler {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        for i in 0..STATES {
            self.states.push(def.state(format!("s{i}"))?);
        }
        for i in 0..STATES {
            def.in_state(self.states[i]).on(
                move |a: &mut Cycler, ctx: &mut Ctx<Cycler>, _: Msg| {
                    a.visits[i] += 1;
                    a.handled += 1;
                    ctx.change_state(a.states[(i + 1) % STATES])
                        .expect("invariant: own state");
                    if a.handled == a.n {
                        a.clock.processed();
                        a.last_state.set(i as u64);
                        ctx.deregister_coop(DeregReason::Normal);
                    }
                },
            )?;
        }
        def.start_in(self.states[0])?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me = ctx.mbox().clone();
        let n = self.n;
        self.clock.send(|| {
            for _ in 0..n {
                me.send(Msg);
            }
        });
        Ok(())
    }

    fn on_finish(&mut self, _ctx: &mut Ctx<Self>) {
        // Each state handled its share: the i-th message went to state i mod 10.
        let n = self.n;
        let fair = self
            .visits
            .iter()
            .enumerate()
            .all(|(i, &v)| v == n / STATES as u64 + u64::from((i as u64) < n % STATES as u64));
        self.fair.set(u64::from(fair));
    }
}

fn cases(scale: Scale) -> Vec<Case> {
    let n = scale.pick(1_000u64, 1_000_000, 10_000_000);
    vec![
        Case::builder(format!("one_thread N={n} states=10"))
            .dispatcher("one_thread")
            .param("N", n)
            .param("states", STATES as u64)
            .phase(PhaseSpec::msgs("send").seed(50_743.0))
            .phase(PhaseSpec::msgs("process").seed(76_583.0))
            .runner(move || {
                let env = env()?;
                let clock = SendThenProcess::default();
                let (last_state, fair) = (Tally::default(), Tally::default());
                let agent = Cycler {
                    n,
                    states: Vec::new(),
                    handled: 0,
                    visits: [0; STATES],
                    clock: clock.clone(),
                    last_state: last_state.clone(),
                    fair: fair.clone(),
                };
                env.handle()
                    .register_agent(agent)
                    .map_err(setup("register"))?;
                let handle = run(env);
                let (send, process) = clock.take()?;
                verify_eq(
                    "state of the last handled message",
                    (n - 1) % STATES as u64,
                    last_state.get(),
                )?;
                verify_eq("every state handled its share", 1, fair.get())?;
                verify_eq("unhandled messages", 0, handle.stats().unhandled)?;
                Ok(Sample::new()
                    .phase("send", send, n)
                    .phase("process", process, n))
            }),
    ]
}
