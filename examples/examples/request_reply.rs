//! `request_reply` — synchronous requests to a service agent, and every way they can fail.
//!
//! A shop agent answers price queries with `Define::on_request`: its handler just returns the
//! reply. Callers use `Mbox::request::<Query, Reply>(query, timeout)`, which blocks the
//! calling thread until the reply or a typed `RequestError`:
//!
//! - from a plain thread (here, the thread calling `run`);
//! - from a customer agent's handler. The customer runs on a second `OneThreadDispatcher`:
//!   an agent that waited for an agent on its *own* dispatcher thread would wait forever,
//!   so that request fails at once with `SameThread` (shown too);
//! - `Timeout`: the shop keeps a backorder's `ReplyTo` until a restock; the caller gives up
//!   first. The late reply is given back to the shop and counted in `replies_discarded`;
//! - `NoHandler`: a query the shop has no handler for. The reply type is part of the
//!   request's type: asking `Price` for a `u64` instead of an `Option<u32>` is a different
//!   request, with no handler either;
//! - `AgentGone`: the shop closed (its coop was deregistered).
//!
//! ```text
//! cargo run -p agentry-examples --example request_reply
//! ```

use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, Define, DefineError, DeregReason, Env, Mbox, ReplyTo, Request, RequestError};
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

/// How long callers wait for an answer that should come.
const PATIENCE: Duration = Duration::from_secs(2);
/// How long the caller waits for a backorder (which will not be answered in time).
const BACKORDER_PATIENCE: Duration = Duration::from_millis(30);

/// What does `item` cost, in cents? (`None`: not sold here.)
struct Price(&'static str);
/// Order `item`, out of stock: the reply (the price paid) comes at the next restock.
struct Backorder(&'static str);
/// The delivery truck came: answer the backorders.
struct Restock;
/// How many backorder replies came too late?
struct LateCount;
/// A query the shop does not answer.
struct Haggle;

/// Answers price queries; keeps backorders until a restock.
struct Shop {
    prices: HashMap<&'static str, u32>,
    backorders: Vec<(&'static str, ReplyTo<u32>)>,
    /// Replies to backorders whose customer had stopped waiting.
    late: u32,
}

impl Agent for Shop {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        // The simple form: the handler returns the reply.
        def.on_request(|shop, _, Price(item): Price| shop.prices.get(item).copied())?;
        // The deferred form: take the whole `Request` and keep its `ReplyTo`.
        def.on(|shop, _, order: Request<Backorder, u32>| {
            let (Backorder(item), reply) = order.into_parts();
            shop.backorders.push((item, reply));
        })?;
        def.on(|shop, _, _: Restock| {
            for (item, reply) in std::mem::take(&mut shop.backorders) {
                let price = shop.prices.get(item).copied().unwrap_or(0);
                // `Err` gives the reply back: the customer timed out.
                if reply.reply(price).is_err() {
                    shop.late += 1;
                }
            }
        })?;
        def.on_request(|shop, _, _: LateCount| shop.late)?;
        Ok(())
    }
}

/// A shopping list to price; the customer asks the shop item by item.
struct ShoppingList(Vec<&'static str>);

/// Prices shopping lists by asking the shop, from its own handler.
struct Customer {
    shop: Mbox,
}

impl Agent for Customer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(|c, _, ShoppingList(items): ShoppingList| {
            items
                .into_iter()
                .map(|item| c.shop.request::<Price, Option<u32>>(Price(item), PATIENCE))
                .collect::<Vec<_>>()
        })?;
        Ok(())
    }
}

/// One priced item as a caller would report it: every error is handled by kind.
fn explain(result: Result<Option<u32>, RequestError>) -> String {
    match result {
        Ok(Some(cents)) => format!("{}.{:02}", cents / 100, cents % 100),
        Ok(None) => "not sold here".to_owned(),
        Err(RequestError::Timeout) => "no answer in time".to_owned(),
        Err(RequestError::NoHandler) => "the shop does not answer that".to_owned(),
        Err(RequestError::AgentGone) => "the shop is closed".to_owned(),
        Err(RequestError::SameThread) => "asked from the shop's own thread".to_owned(),
        // `RequestError` is non-exhaustive: new kinds may appear.
        Err(other) => format!("failed: {other}"),
    }
}

/// Every outcome `run` observed, in order.
#[derive(Debug)]
struct Outcomes {
    /// From the plain thread: a known item, an unknown one.
    plain: Vec<Result<Option<u32>, RequestError>>,
    /// From the customer agent on its own dispatcher.
    from_agent: Vec<Result<Option<u32>, RequestError>>,
    /// From a customer on the shop's dispatcher.
    same_thread: Vec<Result<Option<u32>, RequestError>>,
    haggle: Result<u32, RequestError>,
    wrong_reply_type: Result<u64, RequestError>,
    backorder: Result<u32, RequestError>,
    /// The shop's own count of late replies, and the environment's.
    late_replies: (u32, u64),
    /// After the shop closed: from the plain thread, and through the customer.
    closed: Result<Option<u32>, RequestError>,
    closed_from_agent: Vec<Result<Option<u32>, RequestError>>,
}

fn run() -> Outcomes {
    let env = Env::new().expect("env");
    let h = env.handle().clone();

    let mut shop_coop = h.new_coop();
    let shop = shop_coop.add(Shop {
        prices: HashMap::from([("apple", 120), ("bread", 350), ("widget", 999)]),
        backorders: Vec::new(),
        late: 0,
    });
    let (closed_tx, closed_rx) = mpsc::channel();
    shop_coop.on_dereg(move |event| {
        let _ = closed_tx.send(event);
    });
    let shop_coop = h.register_coop(shop_coop).expect("register the shop");

    // A customer on its own dispatcher (its own thread), and one sharing the shop's.
    let customers = OneThreadDispatcher::new(&h, "customers").expect("dispatcher thread");
    let mut coop = h.new_coop();
    let customer = coop.add_with(Customer { shop: shop.clone() }, &customers.binder());
    let neighbour = coop.add(Customer { shop: shop.clone() }); // default dispatcher
    h.register_coop(coop).expect("register the customers");

    let price = |item| shop.request::<Price, Option<u32>>(Price(item), PATIENCE);
    let list = |c: &Mbox| {
        c.request::<ShoppingList, Vec<Result<Option<u32>, RequestError>>>(
            ShoppingList(vec!["bread", "caviar"]),
            PATIENCE,
        )
        .expect("customers always answer")
    };

    let plain = vec![price("apple"), price("caviar")];
    let from_agent = list(&customer);
    let same_thread = list(&neighbour);
    let haggle = shop.request::<Haggle, u32>(Haggle, PATIENCE);
    let wrong_reply_type = shop.request::<Price, u64>(Price("apple"), PATIENCE);

    let backorder = shop.request::<Backorder, u32>(Backorder("widget"), BACKORDER_PATIENCE);
    shop.send(Restock);
    // Sent after `Restock` by the same thread, so answered after it.
    let late_by_shop = shop
        .request::<LateCount, u32>(LateCount, PATIENCE)
        .expect("the shop answers");
    let late_replies = (late_by_shop, h.stats().replies_discarded);

    h.deregister_coop(shop_coop, DeregReason::Normal)
        .expect("the shop's coop is registered");
    closed_rx
        .recv_timeout(PATIENCE)
        .expect("the shop closes once its agent has finished");
    let closed = price("apple");
    let closed_from_agent = list(&customer);

    h.stop();
    env.run();
    Outcomes {
        plain,
        from_agent,
        same_thread,
        haggle,
        wrong_reply_type,
        backorder,
        late_replies,
        closed,
        closed_from_agent,
    }
}

fn main() {
    let o = run();
    let show = |who: &str, items: &[&str], results: Vec<Result<Option<u32>, RequestError>>| {
        for (item, r) in items.iter().zip(results) {
            println!("{who:>25} {item:>7}: {}", explain(r));
        }
    };
    show("plain thread", &["apple", "caviar"], o.plain);
    show("customer agent", &["bread", "caviar"], o.from_agent);
    show(
        "customer on shop's thread",
        &["bread", "caviar"],
        o.same_thread,
    );
    println!("haggling: {:?}", o.haggle);
    println!("price as u64: {:?}", o.wrong_reply_type);
    println!(
        "backorder: {:?} (late replies: {} by the shop's count, {} by the env's)",
        o.backorder, o.late_replies.0, o.late_replies.1
    );
    show("after closing", &["apple"], vec![o.closed]);
    show(
        "customer after closing",
        &["bread", "caviar"],
        o.closed_from_agent,
    );
}

#[cfg(test)]
mod tests {
    use super::run;
    use agentry::RequestError::{AgentGone, NoHandler, SameThread, Timeout};
    use agentry_examples::{TEST_DEADLINE, within};

    #[test]
    fn replies_and_typed_errors() {
        let o = within(TEST_DEADLINE, run);
        assert_eq!(o.plain, [Ok(Some(120)), Ok(None)]);
        assert_eq!(o.from_agent, [Ok(Some(350)), Ok(None)]);
        assert_eq!(o.same_thread, [Err(SameThread), Err(SameThread)]);
        assert_eq!(o.haggle, Err(NoHandler));
        assert_eq!(o.wrong_reply_type, Err(NoHandler));
        assert_eq!(o.backorder, Err(Timeout));
        assert_eq!(o.late_replies, (1, 1));
        assert_eq!(o.closed, Err(AgentGone));
        assert_eq!(o.closed_from_agent, [Err(AgentGone), Err(AgentGone)]);
    }
}
