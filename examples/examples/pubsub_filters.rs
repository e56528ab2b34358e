//! `pubsub_filters` — publish/subscribe through a named multi mbox, with delivery filters.
//!
//! A sensor publishes temperature readings to the multi mbox named `"thermometer"`. Three
//! agents subscribe to `Reading`: a recorder takes them all, a "too hot" alarm and a "too
//! cold" alarm each take only what their *delivery filter* accepts.
//!
//! - `EnvHandle::named_mbox(name)` gives the same multi mbox for a name every time: the
//!   subscribers get it from `run`, the sensor looks it up by name from its `on_start`.
//! - A filter runs on the publisher's thread, before anything is queued: a declined
//!   delivery costs the subscriber nothing and is counted in `EnvStats::filtered_out`.
//! - Every subscriber of one message shares one allocation: handlers get an `Arc<Reading>`,
//!   and the alarm's copy of a hot reading *is* the recorder's (`Arc::ptr_eq`).
//! - A message type nobody subscribed to is dropped and counted in `no_subscribers`.
//!
//! ```text
//! cargo run -p agentry-examples --example pubsub_filters
//! ```

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, EnvStats, MultiMbox, UserError};
use std::sync::Arc;
use std::sync::mpsc::{self, Sender};

/// The name under which the feed is found.
const FEED: &str = "thermometer";

/// One temperature reading.
#[derive(Debug, PartialEq)]
struct Reading {
    room: &'static str,
    celsius: f32,
}

/// Another kind of message on the same feed (a signal: no payload); nobody listens for it.
struct SensorRebooted;

/// What each subscriber received, sent from its `on_finish`.
type Received = (&'static str, Vec<Arc<Reading>>);

/// Subscribes to the feed's readings, through `accept` if it has one, and keeps them.
struct Subscriber {
    label: &'static str,
    feed: MultiMbox,
    accept: Option<fn(&Reading) -> bool>,
    received: Vec<Arc<Reading>>,
    report: Sender<Received>,
}

impl Subscriber {
    fn new(
        label: &'static str,
        feed: &MultiMbox,
        accept: Option<fn(&Reading) -> bool>,
        report: &Sender<Received>,
    ) -> Self {
        Subscriber {
            label,
            feed: feed.clone(),
            accept,
            received: Vec::new(),
            report: report.clone(),
        }
    }

    fn on_reading(&mut self, _: &mut Ctx<Self>, reading: Arc<Reading>) {
        self.received.push(reading);
    }
}

impl Agent for Subscriber {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        // Subscriptions are made when the coop is registered and end when the agent finishes.
        match self.accept {
            Some(accept) => def
                .from(&self.feed)
                .filter(accept)
                .on(Subscriber::on_reading)?,
            None => def.from(&self.feed).on(Subscriber::on_reading)?,
        };
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        let _ = self
            .report
            .send((self.label, std::mem::take(&mut self.received)));
    }
}

/// Publishes its readings once, then ends the coop.
struct Sensor {
    readings: Vec<Reading>,
}

impl Agent for Sensor {
    fn on_start(&mut self, ctx: &mut Ctx<Self>) -> Result<(), UserError> {
        let feed = ctx
            .env()
            .named_mbox(FEED)
            .expect("a non-empty name never bound to a direct mbox");
        for reading in self.readings.drain(..) {
            feed.send(reading);
        }
        feed.send(SensorRebooted);
        // The subscribers handle every reading already queued before they finish.
        ctx.deregister_coop(DeregReason::Normal);
        Ok(())
    }
}

/// Who received what.
#[derive(Debug)]
struct Summary {
    everything: Vec<Arc<Reading>>,
    too_hot: Vec<Arc<Reading>>,
    too_cold: Vec<Arc<Reading>>,
    stats: EnvStats,
}

fn run(readings: Vec<Reading>) -> Summary {
    let env = Env::new().expect("env");
    let handle = env.handle().clone();
    let feed = handle.named_mbox(FEED).expect("a valid name");
    let (report, reports) = mpsc::channel();

    let mut coop = handle.new_coop();
    coop.add(Subscriber::new("everything", &feed, None, &report));
    coop.add(Subscriber::new(
        "too hot",
        &feed,
        Some(|r| r.celsius > 30.0),
        &report,
    ));
    coop.add(Subscriber::new(
        "too cold",
        &feed,
        Some(|r| r.celsius < 0.0),
        &report,
    ));
    // The publisher goes last: an agent's `on_start` may run while the coop's later agents
    // are still being subscribed, so a publisher added first could miss them.
    coop.add(Sensor { readings });
    handle.register_coop(coop).expect("register");
    drop(report);
    env.run();

    let mut summary = Summary {
        everything: Vec::new(),
        too_hot: Vec::new(),
        too_cold: Vec::new(),
        stats: handle.stats(),
    };
    for (label, received) in reports.try_iter() {
        match label {
            "everything" => summary.everything = received,
            "too hot" => summary.too_hot = received,
            _ => summary.too_cold = received,
        }
    }
    summary
}

fn readings() -> Vec<Reading> {
    [
        ("kitchen", 21.5),
        ("attic", 35.0),
        ("garage", -4.0),
        ("bedroom", 18.0),
        ("attic", 33.5),
        ("kitchen", 24.0),
    ]
    .into_iter()
    .map(|(room, celsius)| Reading { room, celsius })
    .collect()
}

fn main() {
    let s = run(readings());
    for r in &s.everything {
        // Each reading is held by the recorder's list plus one list per alarm that took it.
        let alarms = Arc::strong_count(r) - 1;
        println!(
            "{:>8}: {:>5.1} °C  (also delivered to {alarms} alarm{})",
            r.room,
            r.celsius,
            if alarms == 1 { "" } else { "s" }
        );
    }
    let names = |v: &[Arc<Reading>]| v.iter().map(|r| r.room).collect::<Vec<_>>().join(", ");
    println!("too hot: {}", names(&s.too_hot));
    println!("too cold: {}", names(&s.too_cold));
    println!(
        "filtered out: {}, published with no subscriber: {}",
        s.stats.filtered_out, s.stats.no_subscribers
    );
}

#[cfg(test)]
mod tests {
    use super::{readings, run};
    use agentry_examples::{TEST_DEADLINE, within};
    use std::sync::Arc;

    #[test]
    fn filters_pick_and_everyone_shares_one_allocation() {
        let s = within(TEST_DEADLINE, || run(readings()));
        let celsius = |v: &[Arc<super::Reading>]| v.iter().map(|r| r.celsius).collect::<Vec<_>>();
        assert_eq!(celsius(&s.everything), [21.5, 35.0, -4.0, 18.0, 33.5, 24.0]);
        assert_eq!(celsius(&s.too_hot), [35.0, 33.5]);
        assert_eq!(celsius(&s.too_cold), [-4.0]);
        // The alarms hold the very allocations the recorder holds.
        for r in s.too_hot.iter().chain(&s.too_cold) {
            assert!(s.everything.iter().any(|e| Arc::ptr_eq(e, r)));
        }
        // 4 readings declined by "too hot", 5 by "too cold"; the reboot signal reached no one.
        assert_eq!(s.stats.filtered_out, 9);
        assert_eq!(s.stats.no_subscribers, 1);
        assert_eq!(s.stats.dead_letters + s.stats.unhandled, 0);
    }
}
