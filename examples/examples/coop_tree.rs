//! `coop_tree` — coops form a tree; it is torn down children first, and a panic takes down
//! only the panicking agent's coop.
//!
//! ```text
//! monitor                 (a root coop of its own)
//! server                  (root; registers its children from on_start)
//! ├── worker-a            (registers its own child from on_start)
//! │   └── worker-a/cache
//! └── worker-b            (panics on `Crash`: reaction DeregisterCoop)
//! ```
//!
//! - `Ctx::child_coop` makes a coop whose parent is the agent's coop.
//! - Deregistration listeners: `Coop::on_dereg` (a callback) and `Coop::notify_on_dereg` (a
//!   `CoopDeregistered` message to an mbox) learn the coop's id and `DeregReason` once all its
//!   agents have finished.
//! - `worker-b` panics: the panic is caught and counted (`EnvStats::panics`), and with
//!   `PanicReaction::DeregisterCoop` its coop alone is deregistered (reason `Panic`). Its
//!   parent and sibling keep running.
//! - When the server closes, `worker-a/cache`, then `worker-a`, then `server` finish (reason
//!   `ParentDeregistered` for the descendants). The monitor learns the server is gone, and
//!   ends its own coop; the environment, now without coops, stops.
//!
//! ```text
//! cargo run -p agentry-examples --example coop_tree
//! ```

use agentry::{
    Agent, Coop, CoopDeregistered, Ctx, Define, DefineError, DeregReason, Env, EnvHandle, Mbox,
    PanicReaction, RequestError, UserError,
};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

/// Panics provoked on purpose start with this (and are kept off stderr).
const ON_PURPOSE: &str = "worker-b crashes on purpose";
/// How long to wait for anything that must happen.
const PATIENCE: Duration = Duration::from_secs(5);

/// Which workers do you run?
struct Roster;
/// Are you there? (answers with its name)
struct Ping;
/// Panic in the handler.
struct Crash;
/// Close the server (and so its whole subtree).
struct Close;

/// Makes `coop` write `dereg <name>: <reason>` to the journal when it is gone.
fn journal_dereg(coop: &mut Coop, name: &'static str, journal: &Sender<String>) {
    let journal = journal.clone();
    coop.on_dereg(move |gone: CoopDeregistered| {
        let _ = journal.send(format!("dereg {name}: {:?}", gone.reason));
    });
}

/// Answers pings; registers a child coop with a worker named `child`, if any.
struct Worker {
    name: &'static str,
    child: Option<&'static str>,
    journal: Sender<String>,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|w, _, _: Ping| w.name)?
            .on(|w, _, _: Crash| panic!("{ON_PURPOSE} ({} got Crash)", w.name))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        if let Some(name) = self.child {
            let mut coop = ctx.child_coop();
            coop.add(Worker {
                name,
                child: None,
                journal: self.journal.clone(),
            });
            journal_dereg(&mut coop, name, &self.journal);
            ctx.register_coop(coop)
                .expect("our coop is registered and running");
        }
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.journal.send(format!("finish {}", self.name));
    }
}

/// Starts the workers as child coops; closes its own coop on `Close`.
struct Server {
    workers: Vec<(&'static str, Mbox)>,
    journal: Sender<String>,
}

impl Agent for Server {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|s, _, _: Roster| s.workers.clone())?
            .on(|_, ctx, _: Close| ctx.deregister_coop(DeregReason::Normal))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        for (name, child) in [("worker-a", Some("worker-a/cache")), ("worker-b", None)] {
            let mut coop = ctx.child_coop();
            let mbox = coop.add(Worker {
                name,
                child,
                journal: self.journal.clone(),
            });
            // The default reaction, spelled out: a panic deregisters the panicking agent's
            // coop, and only it.
            coop.set_panic_reaction(PanicReaction::DeregisterCoop);
            journal_dereg(&mut coop, name, &self.journal);
            ctx.register_coop(coop)
                .expect("our coop is registered and running");
            self.workers.push((name, mbox));
        }
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.journal.send("finish server".to_owned());
    }
}

/// Watches the server's coop; when it is gone, ends its own coop (the last one).
struct Monitor {
    journal: Sender<String>,
}

impl Agent for Monitor {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|m, ctx, gone: CoopDeregistered| {
            let _ = m
                .journal
                .send(format!("monitor: server gone ({:?})", gone.reason));
            ctx.deregister_coop(DeregReason::Normal);
        })?;
        Ok(())
    }
}

/// Reads journal entries up to and including `entry`.
fn read_until(journal: &Receiver<String>, entry: &str, into: &mut Vec<String>) {
    loop {
        let next = journal
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("`{entry}` was never written; got {into:?}"));
        let done = next == entry;
        into.push(next);
        if done {
            return;
        }
    }
}

/// What happened.
#[derive(Debug)]
struct Summary {
    journal: Vec<String>,
    /// After worker-b crashed: pinging worker-a, worker-b.
    pings_after_crash: Vec<Result<&'static str, RequestError>>,
    panics: u64,
}

fn run() -> Summary {
    agentry_examples::quiet_panics(ON_PURPOSE);
    let env = Env::new().expect("env");
    let h: EnvHandle = env.handle().clone();
    let (journal, entries) = mpsc::channel();
    let mut seen = Vec::new();

    let monitor = h
        .register_agent(Monitor {
            journal: journal.clone(),
        })
        .expect("register the monitor");
    let mut coop = h.new_coop();
    let server = coop.add(Server {
        workers: Vec::new(),
        journal: journal.clone(),
    });
    coop.notify_on_dereg(&monitor);
    journal_dereg(&mut coop, "server", &journal);
    h.register_coop(coop).expect("register the server");
    drop(journal);

    // Answered after on_start, which registered the workers.
    let workers = server
        .request::<Roster, Vec<(&'static str, Mbox)>>(Roster, PATIENCE)
        .expect("the server answers");
    let ping = |m: &Mbox| m.request::<Ping, &'static str>(Ping, PATIENCE);
    // Answered after worker-a's on_start, which registered its cache.
    ping(&workers[0].1).expect("worker-a answers");

    workers[1].1.send(Crash);
    read_until(&entries, "dereg worker-b: Panic", &mut seen);
    let pings_after_crash = workers.iter().map(|(_, m)| ping(m)).collect();

    server.send(Close);
    env.run();
    seen.extend(entries.try_iter());
    Summary {
        journal: seen,
        pings_after_crash,
        panics: h.stats().panics,
    }
}

fn main() {
    let s = run();
    for entry in &s.journal {
        println!("  {entry}");
    }
    println!("pings after the crash: {:?}", s.pings_after_crash);
    println!("panics caught: {}", s.panics);
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry::RequestError;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn panic_takes_one_coop_and_children_finish_first() {
        let s = within(TEST_DEADLINE, run);
        let at = |entry: &str| {
            s.journal
                .iter()
                .position(|e| e == entry)
                .unwrap_or_else(|| panic!("no `{entry}` in {:?}", s.journal))
        };
        // The crash: worker-b alone went, with reason Panic; the others still answer.
        assert!(at("finish worker-b") < at("dereg worker-b: Panic"));
        assert_eq!(
            s.pings_after_crash,
            [Ok("worker-a"), Err(RequestError::AgentGone)]
        );
        assert_eq!(s.panics, 1);
        // Closing the server: children finish first, and are told apart by their reason.
        assert!(at("dereg worker-b: Panic") < at("finish worker-a/cache"));
        assert!(at("finish worker-a/cache") < at("finish worker-a"));
        assert!(at("finish worker-a") < at("finish server"));
        assert!(
            at("dereg worker-a/cache: ParentDeregistered")
                < at("dereg worker-a: ParentDeregistered")
        );
        assert!(at("dereg worker-a: ParentDeregistered") < at("dereg server: Normal"));
        assert!(at("dereg server: Normal") < at("monitor: server gone (Normal)"));
        assert_eq!(s.journal.len(), 9, "each event once: {:?}", s.journal);
    }
}
