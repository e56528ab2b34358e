//! `mchain_select` — plain threads talking to agents through message chains.
//!
//! A market agent publishes quotes to a multi mbox; an order desk agent confirms orders. The
//! trader is *not* an agent: it is a plain thread that waits on two message chains at once
//! with `Select` — one subscribed to the quotes, one where the desk sends its confirmations —
//! and buys whenever a price is below 100.
//!
//! - `Mchain::subscribe::<Quote>(&multi)`: a chain gets what a multi mbox publishes, as
//!   `Arc<Quote>` (like a subscribed agent).
//! - The order carries where to confirm as an `Arc<dyn Destination<Confirmed>>`: the desk
//!   sends to it as it would to any mbox, without knowing a thread is at the other end.
//! - `Select::wait` takes the first message either chain has (round robin between busy
//!   chains) and runs the closure for its type; closures return what the loop needs.
//! - The main thread gets the trader's result back through a third chain.
//!
//! ```text
//! cargo run -p agentry-examples --example mchain_select
//! ```

use agentry::mchain::{Close, Handlers, Select};
use agentry::{
    Agent, Ctx, Define, DefineError, Destination, Env, Mbox, MultiMbox, UserError, mchain::Mchain,
};
use std::sync::Arc;
use std::time::Duration;

/// A price quote, published to every subscriber (hence `Sync`).
struct Quote(u32);
/// The market closed: no more quotes.
struct MarketClosed;
/// Buy at `price`; confirm to `confirm_to`.
struct Order {
    price: u32,
    confirm_to: Arc<dyn Destination<Confirmed>>,
}
/// An order was executed.
struct Confirmed(u32);

/// Publishes a day of quotes, then closes.
struct Market(MultiMbox);

impl Agent for Market {
    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        for price in [105, 99, 101, 97, 103, 95] {
            self.0.send(Quote(price));
        }
        self.0.send(MarketClosed);
        Ok(())
    }
}

/// Executes orders.
struct Desk;

impl Agent for Desk {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Desk, _: &mut Ctx<Desk>, order: Order| {
            order.confirm_to.send(Confirmed(order.price));
        })?;
        Ok(())
    }
}

/// What the trader's select saw.
enum Event {
    Quote(u32),
    Closed,
    Confirmed(u32),
}

/// The trader's thread: buys below 100 until the market closes and every order is confirmed.
fn trade(quotes: Mchain, desk: Mbox, report: Mchain) {
    let confirmations = Mchain::unbounded();
    let mut on_quote = Handlers::new();
    on_quote
        .on(|q: Arc<Quote>| Event::Quote(q.0))
        .expect("the first closure for Arc<Quote>")
        .on(|_: Arc<MarketClosed>| Event::Closed)
        .expect("the first closure for Arc<MarketClosed>");
    let mut on_confirmation = Handlers::new();
    on_confirmation
        .on(|Confirmed(price): Confirmed| Event::Confirmed(price))
        .expect("one closure");
    let mut select = Select::new();
    select
        .case(&quotes, on_quote)
        .case(&confirmations, on_confirmation);

    let (mut ordered, mut bought, mut open) = (0, Vec::new(), true);
    while open || bought.len() < ordered {
        match select.wait(Duration::from_secs(5)) {
            Ok(Event::Quote(price)) if price < 100 => {
                ordered += 1;
                desk.send(Order {
                    price,
                    confirm_to: Arc::new(confirmations.clone()),
                });
            }
            Ok(Event::Quote(_)) => {}
            Ok(Event::Closed) => {
                open = false;
                quotes.close(Close::DropContent);
            }
            Ok(Event::Confirmed(price)) => bought.push(price),
            // The market went quiet (or every chain closed): report what we have.
            Err(e) => {
                eprintln!("trader stops early: {e}");
                break;
            }
        }
    }
    report.send(bought);
}

fn run() -> Vec<u32> {
    let env = Env::new().expect("env");
    let market = env.handle().create_mbox();
    // Subscribed before the market starts publishing.
    let quotes = Mchain::unbounded();
    quotes.subscribe::<Quote>(&market).expect("subscribed");
    quotes
        .subscribe::<MarketClosed>(&market)
        .expect("subscribed");

    let desk = env.handle().register_agent(Desk).expect("desk");
    let report = Mchain::unbounded();
    let trader = {
        let report = report.clone();
        std::thread::spawn(move || trade(quotes, desk, report))
    };
    env.handle().register_agent(Market(market)).expect("market");

    let bought = report
        .recv(Duration::from_secs(10))
        .expect("the trader reports")
        .downcast::<Vec<u32>>()
        .expect("a list of prices");
    trader.join().expect("trader");
    env.handle().stop();
    env.run();
    bought
}

fn main() {
    println!("bought at {:?}", run());
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn the_trader_buys_every_quote_below_100_in_order() {
        assert_eq!(within(TEST_DEADLINE, run), [99, 97, 95]);
    }
}
