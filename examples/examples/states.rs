//! `states` — an agent as a hierarchical state machine: a network connection.
//!
//! ```text
//! disconnected ──Connect──▶ connecting ──Handshake──▶ connected ─┬─ idle  (initial substate)
//!      ▲                                                  │      └─ busy
//!      └──────────────────────Disconnect──────────────────┘
//! ```
//!
//! - States are declared in `define`; `start_in` picks the first one. `connected` has two
//!   substates and enters `idle` first (`initial_substate`).
//! - `on_enter` / `on_exit` hooks run on every transition: exits innermost first, then enters
//!   outermost first. A state change asked for in a handler happens when the handler returns.
//! - `Job` is handled differently per state: `idle` starts it, `busy` queues it; in
//!   `disconnected` there is no handler at all, so a `Job` sent then is *unhandled*: it is
//!   dropped and counted in `AgentStats::unhandled` (and `EnvStats::unhandled`).
//! - `Disconnect` is subscribed once, in `connected`; `idle` and `busy` inherit it.
//!
//! ```text
//! cargo run -p agentry-examples --example states
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, State};
use std::collections::VecDeque;
use std::sync::mpsc::{self, Sender};

struct Connect;
struct Handshake;
struct Disconnect;
/// Some work to do over the connection.
struct Job(u32);
/// The job in progress is done.
struct JobDone;
/// Asks the connection which state it is in.
struct Status;

/// The connection's states (handles are filled in by `define`).
#[derive(Default)]
struct States {
    disconnected: State,
    connecting: State,
    connected: State,
    idle: State,
    busy: State,
}

/// A connection that runs one job at a time while connected.
struct Connection {
    s: States,
    current: Option<u32>,
    backlog: VecDeque<u32>,
    /// Every hook and handler reports what it did here, in order.
    journal: Sender<String>,
}

impl Connection {
    fn note(&self, event: impl Into<String>) {
        let _ = self.journal.send(event.into());
    }

    /// The agentry `State` is a plain handle; its name is ours to keep.
    fn name(&self, state: State) -> &'static str {
        let s = &self.s;
        [
            (s.disconnected, "disconnected"),
            (s.connecting, "connecting"),
            (s.connected, "connected"),
            (s.idle, "connected.idle"),
            (s.busy, "connected.busy"),
        ]
        .into_iter()
        .find_map(|(h, name)| (h == state).then_some(name))
        .unwrap_or("default")
    }

    fn go(ctx: &mut Ctx<Self>, to: State) {
        ctx.change_state(to)
            .expect("a state of this agent, changed from a handler");
    }

    fn start(&mut self, ctx: &mut Ctx<Self>, job: u32) {
        self.note(format!("job {job}: started"));
        self.current = Some(job);
        if ctx.state() != self.s.busy {
            Self::go(ctx, self.s.busy);
        }
    }

    fn on_job_when_idle(&mut self, ctx: &mut Ctx<Self>, Job(n): Job) {
        self.start(ctx, n);
    }

    fn on_job_when_busy(&mut self, _: &mut Ctx<Self>, Job(n): Job) {
        self.note(format!("job {n}: queued"));
        self.backlog.push_back(n);
    }

    fn on_job_done(&mut self, ctx: &mut Ctx<Self>, _: JobDone) {
        if let Some(done) = self.current.take() {
            self.note(format!("job {done}: done"));
        }
        match self.backlog.pop_front() {
            Some(next) => self.start(ctx, next),
            None => Self::go(ctx, self.s.idle),
        }
    }
}

impl Agent for Connection {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let s = &mut self.s;
        s.disconnected = def.state("disconnected")?;
        s.connecting = def.state("connecting")?;
        s.connected = def.state("connected")?;
        s.idle = def.substate(s.connected, "idle")?;
        s.busy = def.substate(s.connected, "busy")?;
        def.start_in(s.disconnected)?
            .initial_substate(s.connected, s.idle)?;

        for state in [s.disconnected, s.connecting, s.connected, s.idle, s.busy] {
            def.on_enter(state, move |c, _| {
                c.note(format!("enter {}", c.name(state)));
            })?
            .on_exit(state, move |c, _| {
                c.note(format!("exit {}", c.name(state)));
            })?;
        }

        def.in_state(s.disconnected)
            .on(|c, ctx, _: Connect| Connection::go(ctx, c.s.connecting))?;
        def.in_state(s.connecting).on(|c, ctx, _: Handshake| {
            // Entering `connected` goes on down to `connected.idle`.
            Connection::go(ctx, c.s.connected)
        })?;
        // Inherited by `idle` and `busy`: leaving either exits it, then `connected`.
        def.in_state(s.connected).on(|c, ctx, _: Disconnect| {
            c.backlog.clear();
            Connection::go(ctx, c.s.disconnected)
        })?;
        // One message type, one handler per state (none in `disconnected`/`connecting`).
        def.in_state(s.idle).on(Connection::on_job_when_idle)?;
        def.in_state(s.busy)
            .on(Connection::on_job_when_busy)?
            .in_state(s.busy)
            .on(Connection::on_job_done)?;
        // Answerable everywhere: the substates of `connected` inherit it.
        def.in_states(&[s.disconnected, s.connecting, s.connected])
            .on_request(|c, ctx, _: Status| c.name(ctx.state()))?;
        Ok(())
    }

    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        // Runs before the states are left (their on_exit hooks come after it).
        self.note(format!("finish in {}", self.name(ctx.state())));
    }
}

/// What the connection went through.
#[derive(Debug)]
struct Summary {
    /// Hooks and handlers, in the order they ran.
    journal: Vec<String>,
    /// The answer to `Status` after the jobs were done.
    status_after_jobs: &'static str,
    /// Messages the connection handled / had no handler for (its own counters).
    handled: u64,
    unhandled: u64,
}

fn run() -> Summary {
    let env = Env::new().expect("env");
    let handle = env.handle().clone();
    let (journal, entries) = mpsc::channel();
    let conn = handle
        .register_agent(Connection {
            s: States::default(),
            current: None,
            backlog: VecDeque::new(),
            journal,
        })
        .expect("register the connection");

    // One sender (this thread): handled in this order.
    conn.send(Job(0)); // too early: no handler in `disconnected`
    conn.send(Connect);
    conn.send(Handshake);
    conn.send(Job(1));
    conn.send(Job(2));
    conn.send(JobDone);
    conn.send(JobDone);
    let status_after_jobs = conn
        .request::<Status, &'static str>(Status, std::time::Duration::from_secs(5))
        .expect("the connection answers Status in every state");
    conn.send(Disconnect);

    handle.stop();
    env.run();
    // The agent is gone; its mbox still reports its final counters.
    let stats = conn.stats();
    Summary {
        journal: entries.try_iter().collect(),
        status_after_jobs,
        handled: stats.handled,
        unhandled: stats.unhandled,
    }
}

fn main() {
    let summary = run();
    for entry in &summary.journal {
        println!("  {entry}");
    }
    println!("status after the jobs: {}", summary.status_after_jobs);
    println!(
        "handled {} messages; {} had no handler in the state they arrived in",
        summary.handled, summary.unhandled
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn transitions_hooks_and_the_unhandled_job() {
        let s = within(TEST_DEADLINE, run);
        assert_eq!(
            s.journal,
            [
                "enter disconnected",
                // Job 0 arrived here: no handler, no entry.
                "exit disconnected",
                "enter connecting",
                "exit connecting",
                "enter connected",
                "enter connected.idle",
                "job 1: started",
                "exit connected.idle",
                "enter connected.busy",
                "job 2: queued",
                "job 1: done",
                "job 2: started",
                "job 2: done",
                "exit connected.busy",
                "enter connected.idle",
                "exit connected.idle",
                "exit connected",
                "enter disconnected",
                "finish in disconnected",
                "exit disconnected",
            ]
        );
        assert_eq!(s.status_after_jobs, "connected.idle");
        assert_eq!(s.unhandled, 1, "Job(0) in `disconnected`");
        assert_eq!(
            s.handled, 8,
            "everything else, including the Status request"
        );
    }
}
