//! `states_time_limits` — states that end by themselves after a while.
//!
//! A phone has states `idle`, `ringing`, `talking`, `dialing` and `no_answer`:
//!
//! ```text
//! idle ──Call──▶ ringing ──(answered)──▶ talking ──HangUp──▶ idle ──Dial──▶ dialing
//!                   └──(10 s: limit)──▶ idle                                  │
//!                                            no_answer ◀──(20 ms: limit)──────┘
//! ```
//!
//! - `Define::time_limit(state, d, then)`: `d` after entering `state`, the agent switches to
//!   `then` (with the usual exit / enter hooks). Leaving the state earlier cancels the limit.
//! - The incoming call is answered at once by a callee agent, so `ringing` is left long
//!   before its 10 s limit: the limit's timer is cancelled (no timer is left afterwards).
//! - Nobody answers the outgoing call: 20 ms after entering `dialing` the phone is in
//!   `no_answer` — the limit did it, no message was sent.
//! - The outcome does not depend on timing (the callee answers within microseconds, 10 s are
//!   a huge margin); to test the timing itself use virtual time
//!   (`examples/testing_virtual_time.rs`).
//!
//! ```text
//! cargo run -p agentry-examples --example states_time_limits
//! ```

use agentry::{Agent, Ctx, Define, DefineError, Env, Mbox, State, mchain::Mchain};
use std::time::Duration;

struct Call;
struct Ring(Mbox);
struct Answer;
struct HangUp;
struct Dial;

/// The phone's states (handles filled in by `define`).
#[derive(Default)]
struct States {
    idle: State,
    ringing: State,
    talking: State,
    dialing: State,
    no_answer: State,
}

struct Phone {
    s: States,
    callee: Mbox,
    /// Every state entered, and the number of timers at that moment.
    journal: Mchain,
}

impl Agent for Phone {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let s = &mut self.s;
        s.idle = def.state("idle")?;
        s.ringing = def.state("ringing")?;
        s.talking = def.state("talking")?;
        s.dialing = def.state("dialing")?;
        s.no_answer = def.state("no_answer")?;
        def.start_in(s.idle)?
            .time_limit(s.ringing, Duration::from_secs(10), s.idle)?
            .time_limit(s.dialing, Duration::from_millis(20), s.no_answer)?;
        for state in [s.idle, s.ringing, s.talking, s.dialing, s.no_answer] {
            // One hook per state (a second `on_enter` for a state would replace the first).
            def.on_enter(state, |p: &mut Phone, ctx: &mut Ctx<Phone>| {
                let timers = ctx.env().stats().timers;
                p.journal
                    .send(format!("{} (timers: {timers})", ctx.state_name()));
                if ctx.state() == p.s.ringing {
                    p.callee.send(Ring(ctx.mbox().clone()));
                } else if ctx.state() == p.s.no_answer {
                    ctx.stop_env();
                }
            })?;
        }
        def.in_state(s.idle)
            .on(|p: &mut Phone, ctx: &mut Ctx<Phone>, _: Call| go(ctx, p.s.ringing))?
            .in_state(s.idle)
            .on(|p: &mut Phone, ctx: &mut Ctx<Phone>, _: Dial| go(ctx, p.s.dialing))?;
        def.in_state(s.ringing)
            .on(|p: &mut Phone, ctx: &mut Ctx<Phone>, _: Answer| go(ctx, p.s.talking))?;
        def.in_state(s.talking)
            .on(|p: &mut Phone, ctx: &mut Ctx<Phone>, _: HangUp| {
                go(ctx, p.s.idle);
                // Now call out; nobody will answer.
                ctx.mbox().send(Dial);
            })?;
        Ok(())
    }
}

fn go(ctx: &mut Ctx<Phone>, to: State) {
    ctx.change_state(to).expect("a state of the phone");
}

/// Answers a ringing phone, then hangs up.
struct Callee;

impl Agent for Callee {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Callee, _: &mut Ctx<Callee>, Ring(phone): Ring| {
            phone.send(Answer);
            phone.send(HangUp);
        })?;
        Ok(())
    }
}

fn run() -> Vec<String> {
    let env = Env::new().expect("env");
    let journal = Mchain::unbounded();
    let mut coop = env.handle().new_coop();
    let callee = coop.add(Callee);
    let phone = coop.add(Phone {
        s: States::default(),
        callee,
        journal: journal.clone(),
    });
    env.handle().register_coop(coop).expect("registered");
    phone.send(Call);
    env.run();
    let mut entries = Vec::new();
    while let Ok(entry) = journal.try_recv() {
        entries.push(entry.downcast::<String>().expect("text entries"));
    }
    entries
}

fn main() {
    for entry in run() {
        println!("  {entry}");
    }
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn answered_before_the_limit_then_no_answer_by_the_limit() {
        let journal = within(TEST_DEADLINE, run);
        assert_eq!(
            journal,
            [
                "idle (timers: 0)",
                // The limit's timer starts as the state is entered (before its hooks).
                "ringing (timers: 1)",
                // Left early: the 10 s limit was cancelled.
                "talking (timers: 0)",
                "idle (timers: 0)",
                "dialing (timers: 1)",
                // 20 ms later, by the limit.
                "no_answer (timers: 0)",
            ]
        );
    }
}
