//! `supervised` — a supervising coop restarts a failing child and nothing it was sent is lost.
//!
//! A `Parser` agent turns lines into numbers and hands them to a `Sum` agent. A line that is not
//! a number makes the parser panic. The parser is added to a supervising coop with a factory
//! (`Coop::add_supervised`), so a panic is a *failure* its supervisor handles
//! (`PanicReaction::Supervise`): the failed parser's `on_finish` runs, the factory makes a fresh
//! one — same mbox, new `AgentId` — and after a short backoff it starts and takes the lines
//! that arrived meanwhile, in order. The bad line itself is consumed by the panic.
//!
//! The policy allows at most 5 restarts within 1 s; a sixth failure would *escalate*:
//! the supervising coop would be deregistered with `DeregReason::Escalation`.
//!
//! ```text
//! cargo run -p agentry-examples --example supervised
//! ```

use agentry::supervision::{Backoff, Strategy, Supervision};
use agentry::{Agent, Ctx, Define, DefineError, Env, EnvStats, Mbox, UserError};
use std::time::Duration;

/// A line of input.
struct Line(&'static str);
/// What has been summed so far?
struct Total;

/// Parses lines; panics on a bad one.
struct Parser {
    sum: Mbox,
    incarnation: u32,
}

impl Agent for Parser {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|p: &mut Parser, _: &mut Ctx<Parser>, Line(text): Line| {
            let n: u64 = text
                .parse()
                .unwrap_or_else(|_| panic!("supervised example: `{text}` is not a number"));
            p.sum.send(n);
        })?;
        Ok(())
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        println!("parser #{} started as {}", self.incarnation, ctx.id());
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        println!("parser #{} finished", self.incarnation);
    }
}

/// Adds up the numbers.
#[derive(Default)]
struct Sum {
    total: u64,
    count: u32,
}

impl Agent for Sum {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Sum, _: &mut Ctx<Sum>, n: u64| {
            s.total += n;
            s.count += 1;
        })?
        .on_request(|s: &mut Sum, _: &mut Ctx<Sum>, _: Total| (s.count, s.total))?;
        Ok(())
    }
}

/// What the run came to.
#[derive(Debug)]
struct Outcome {
    /// Numbers summed, and their total.
    summed: (u32, u64),
    /// Restarts of the parser.
    restarts: u64,
    stats: EnvStats,
}

fn run(lines: &[&'static str]) -> Outcome {
    agentry_examples::quiet_panics("supervised example");
    let env = Env::new().expect("env");
    let h = env.handle().clone();

    let mut coop = h.new_coop();
    coop.supervise(
        Supervision::new(Strategy::OneForOne)
            .intensity(5, Duration::from_secs(1))
            .backoff(Backoff::Fixed(Duration::from_millis(5))),
    );
    let sum = coop.add(Sum::default());
    let mut made = 0;
    let for_parser = sum.clone();
    let parser = coop.add_supervised(move || {
        made += 1;
        Parser {
            sum: for_parser.clone(),
            incarnation: made,
        }
    });
    h.register_coop(coop).expect("register");

    for &line in lines {
        parser.send(Line(line));
    }
    // Wait until the parser has taken every line: its last incarnation has started and the
    // sum has seen every good line.
    let good = lines.iter().filter(|l| l.parse::<u64>().is_ok()).count() as u32;
    let summed = loop {
        let (count, total) = sum
            .request::<Total, (u32, u64)>(Total, Duration::from_secs(5))
            .expect("the sum answers");
        if count == good {
            break (count, total);
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let outcome = Outcome {
        summed,
        restarts: parser.stats().restarts,
        stats: h.stats(),
    };
    h.stop();
    env.run();
    outcome
}

fn main() {
    let o = run(&["1", "2", "oops", "3", "4", "?", "5"]);
    println!(
        "summed {} numbers, total {}; the parser was restarted {} times",
        o.summed.0, o.summed.1, o.restarts
    );
    println!(
        "EnvStats: restarts {}, escalations {}, panics {}, dead_letters {}",
        o.stats.restarts, o.stats.escalations, o.stats.panics, o.stats.dead_letters
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn the_parser_is_restarted_and_no_good_line_is_lost() {
        let o = within(TEST_DEADLINE, || {
            run(&["1", "2", "oops", "3", "4", "?", "5"])
        });
        assert_eq!(
            o.summed,
            (5, 15),
            "every good line, including those sent after a failure"
        );
        assert_eq!(o.restarts, 2, "one restart per bad line");
        assert_eq!((o.stats.restarts, o.stats.escalations), (2, 0));
        assert_eq!(o.stats.panics, 2);
        assert_eq!(o.stats.dead_letters, 0, "nothing was lost");
    }
}
