//! `ping_pong` — two agents of one coop exchange messages through their mboxes.
//!
//! - `Coop::add` returns an agent's direct mbox before the coop is registered, which is how
//!   agents are wired together: the ponger is added first and its mbox handed to the pinger.
//! - The ponger learns where to answer from an `Introduce` message that the pinger sends from
//!   `on_start`, before its first ping. Both come from one sender (the pinger), and one
//!   sender's messages to one agent are handled in send order.
//! - After the last pong the pinger deregisters the coop; with autoshutdown (the default) the
//!   environment stops when its last coop is gone, and `Env::run` returns. Each agent reports
//!   its count from `on_finish`, which runs exactly once as the coop goes away.
//!
//! ```text
//! cargo run -p agentry-examples --example ping_pong
//! ```

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, Mbox, UserError};
use std::sync::mpsc::{self, Sender};

/// Tells the ponger where to send its pongs.
struct Introduce(Mbox);
/// The `n`-th ping.
struct Ping(u32);
/// The answer to the `n`-th ping.
struct Pong(u32);

/// What one agent counted, sent from its `on_finish`.
enum Tally {
    Pings(u32),
    Pongs { received: u32, out_of_order: u32 },
}

/// Sends `rounds` pings, one after each pong, then ends the game.
struct Pinger {
    ponger: Mbox,
    rounds: u32,
    pongs: u32,
    out_of_order: u32,
    tally: Sender<Tally>,
}

impl Agent for Pinger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(Pinger::on_pong)?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        self.ponger.send(Introduce(ctx.mbox().clone()));
        self.ponger.send(Ping(1));
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.tally.send(Tally::Pongs {
            received: self.pongs,
            out_of_order: self.out_of_order,
        });
    }
}

impl Pinger {
    fn on_pong(&mut self, ctx: &mut Ctx<Self>, Pong(n): Pong) {
        self.pongs += 1;
        if n != self.pongs {
            self.out_of_order += 1;
        }
        if self.pongs < self.rounds {
            self.ponger.send(Ping(self.pongs + 1));
        } else {
            // Both agents finish once their queues are drained: nothing in flight is lost.
            ctx.deregister_coop(DeregReason::Normal);
        }
    }
}

/// Answers every ping with a pong to whoever introduced itself.
struct Ponger {
    pinger: Option<Mbox>,
    pings: u32,
    tally: Sender<Tally>,
}

impl Agent for Ponger {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p, _, Introduce(to): Introduce| {
            p.pinger = Some(to);
        })?
        .on(|p, _, Ping(n): Ping| {
            p.pings += 1;
            if let Some(to) = &p.pinger {
                to.send(Pong(n));
            }
        })?;
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self.tally.send(Tally::Pings(self.pings));
    }
}

/// What a game of ping-pong counted.
#[derive(Debug, PartialEq, Eq)]
struct Rally {
    pings_received: u32,
    pongs_received: u32,
    pongs_out_of_order: u32,
}

/// Plays `rounds` rounds of ping-pong.
fn run(rounds: u32) -> Rally {
    let env = Env::new().expect("env");
    let (tally, tallies) = mpsc::channel();
    let mut coop = env.handle().new_coop();
    let ponger = coop.add(Ponger {
        pinger: None,
        pings: 0,
        tally: tally.clone(),
    });
    coop.add(Pinger {
        ponger,
        rounds,
        pongs: 0,
        out_of_order: 0,
        tally,
    });
    env.handle().register_coop(coop).expect("register the game");
    env.run();

    let mut rally = Rally {
        pings_received: 0,
        pongs_received: 0,
        pongs_out_of_order: 0,
    };
    // Both agents have finished (and dropped their senders): the channel holds both tallies.
    for t in tallies.try_iter() {
        match t {
            Tally::Pings(n) => rally.pings_received = n,
            Tally::Pongs {
                received,
                out_of_order,
            } => {
                rally.pongs_received = received;
                rally.pongs_out_of_order = out_of_order;
            }
        }
    }
    rally
}

fn main() {
    let rally = run(100_000);
    println!(
        "pings received: {}, pongs received: {} ({} out of order)",
        rally.pings_received, rally.pongs_received, rally.pongs_out_of_order
    );
}

#[cfg(test)]
mod tests {
    use super::{Rally, run};
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn every_ping_gets_its_pong_in_order() {
        assert_eq!(
            within(TEST_DEADLINE, || run(1_000)),
            Rally {
                pings_received: 1_000,
                pongs_received: 1_000,
                pongs_out_of_order: 0,
            }
        );
    }
}
