//! `hello` — the smallest Agentry program.
//!
//! One agent, alone in its coop, prints a greeting when it starts and stops the environment;
//! `Env::run` then returns, once every agent has finished and the dispatcher thread has been
//! joined.
//!
//! ```text
//! cargo run -p agentry-examples --example hello
//! ```

use agentry::{Agent, Ctx, Env, EnvStats, UserError};
use std::io::Write;

/// Greets `whom` on `out` when it starts, then stops the environment.
struct Greeter<W> {
    whom: String,
    out: W,
}

// An agent that handles no messages needs no `define`: the defaults of `Agent` do nothing.
impl<W: Write + Send + 'static> Agent for Greeter<W> {
    /// Runs on the agent's dispatcher thread, before any message.
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        // A greeting that cannot be written has nowhere better to go.
        let _ = writeln!(self.out, "Hello, {}!", self.whom);
        // Returns at once; the environment deregisters every coop, then `run` returns.
        ctx.stop_env();
        Ok(())
    }
}

/// Greets `whom` on `out`; returns the environment's counters once it has stopped.
fn run(whom: &str, out: impl Write + Send + 'static) -> EnvStats {
    let env = Env::new().expect("an environment starts its default dispatcher thread");
    // The handle is what threads and agents use; it stays usable after the env is gone.
    let handle = env.handle().clone();
    handle
        .register_agent(Greeter {
            whom: whom.to_owned(),
            out,
        })
        .expect("a coop of one agent without definitions registers");
    env.run();
    handle.stats()
}

fn main() {
    let stats = run("world", std::io::stdout());
    println!(
        "(stopped: {} coops and {} agents left)",
        stats.coops, stats.agents
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{SharedBuf, TEST_DEADLINE, within};

    #[test]
    fn greets_once_and_stops() {
        let out = SharedBuf::default();
        let stats = within(TEST_DEADLINE, {
            let out = out.clone();
            move || run("world", out)
        });
        assert_eq!(out.contents(), "Hello, world!\n");
        assert_eq!((stats.coops, stats.agents), (0, 0));
        assert_eq!(stats.dead_letters + stats.unhandled + stats.panics, 0);
    }
}
