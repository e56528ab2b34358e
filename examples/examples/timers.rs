//! `timers` — delayed and periodic messages, and cancelling them.
//!
//! A cook stirs a pot every 10 ms (a *periodic* timer), stops stirring after the third stir
//! by cancelling that timer from its own handler, then serves 20 ms later (a *delayed*
//! message). A "burnt!" alarm set for an hour is cancelled when the dish is served, and a
//! timer whose handle is dropped never fires at all.
//!
//! - `Ctx::send_periodic` / `send_delayed` (also on `EnvHandle`) return a `TimerHandle`.
//!   Dropping the handle cancels the timer; `detach()` lets it run without one.
//! - After `TimerHandle::cancel` returns the timer's message is never handled — even one
//!   already queued — so the stir count is exactly three, however late the cook runs.
//! - Timers can target any `Destination`: an agent's mbox, a multi mbox, or a message chain.
//! - The timing is real (system clock) but the outcome does not depend on it; to test timing
//!   itself, use virtual time (`examples/testing_virtual_time.rs`).
//!
//! ```text
//! cargo run -p agentry-examples --example timers
//! ```

use agentry::{
    Agent, Ctx, Define, DefineError, Env, EnvStats, UserError, mchain::Mchain, timer::TimerHandle,
};
use std::time::Duration;

#[derive(Clone)]
struct Stir;
struct Serve;
struct Burnt;
struct Never;

/// Cooks one dish; reports what happened, in order, to `journal`.
struct Cook {
    journal: Mchain,
    stirs: u32,
    stirring: Option<TimerHandle>,
    alarm: Option<TimerHandle>,
}

impl Agent for Cook {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Cook::on_stir)?.on(Cook::on_serve)?;
        def.on(|c: &mut Cook, _: &mut Ctx<Cook>, _: Burnt| c.journal.send("burnt!"))?;
        def.on(|c: &mut Cook, _: &mut Ctx<Cook>, _: Never| c.journal.send("never"))?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let me = ctx.mbox().clone();
        let ms = Duration::from_millis;
        self.stirring = Some(ctx.send_periodic(&me, ms(10), ms(10), Stir));
        self.alarm = Some(ctx.send_delayed(&me, Duration::from_secs(3600), Burnt));
        // Dropped at once: cancelled, never fires.
        drop(ctx.send_delayed(&me, ms(1), Never));
        Ok(())
    }
}

impl Cook {
    fn on_stir(&mut self, ctx: &mut Ctx<Self>, _: Stir) {
        self.stirs += 1;
        self.journal.send(format!("stir {}", self.stirs));
        if self.stirs == 3 {
            if let Some(periodic) = self.stirring.take() {
                periodic.cancel();
            }
            let me = ctx.mbox().clone();
            ctx.send_delayed(&me, Duration::from_millis(20), Serve)
                .detach();
        }
    }

    fn on_serve(&mut self, ctx: &mut Ctx<Self>, _: Serve) {
        if let Some(alarm) = self.alarm.take() {
            alarm.cancel();
        }
        self.journal.send("served".to_owned());
        ctx.stop_env();
    }
}

fn run() -> (Vec<String>, EnvStats) {
    let env = Env::new().expect("env");
    let journal = Mchain::unbounded();
    env.handle()
        .register_agent(Cook {
            journal: journal.clone(),
            stirs: 0,
            stirring: None,
            alarm: None,
        })
        .expect("register the cook");
    let stats = env.run();
    let mut entries = Vec::new();
    while let Ok(entry) = journal.try_recv() {
        match entry.downcast::<String>() {
            Ok(text) => entries.push(text),
            Err(other) => entries.push(format!("<{}>", other.type_name())),
        }
    }
    (entries, stats)
}

fn main() {
    let (journal, stats) = run();
    for entry in &journal {
        println!("  {entry}");
    }
    println!(
        "timers left: {}, revoked after cancel: {}",
        stats.timers, stats.timers_revoked
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn three_stirs_then_served_and_nothing_else() {
        let (journal, stats) = within(TEST_DEADLINE, run);
        assert_eq!(journal, ["stir 1", "stir 2", "stir 3", "served"]);
        assert_eq!(stats.timers, 0, "every timer fired or was cancelled");
    }
}
