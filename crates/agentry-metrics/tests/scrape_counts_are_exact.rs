//! A scrape of the endpoint reports exactly what the runtime counted: per agent type, the
//! outcomes of the messages sent to it (including agents that are gone), queue depths and
//! handler time where asked for; per dispatcher, its agents and threads; the environment's
//! own counters — in the Prometheus text format, every family with its HELP and TYPE.

mod common;

use agentry::disp::ThreadPoolDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env, HandlerSampling};
use agentry_metrics::Metrics;
use common::{Exposition, scrape, wait_until};

struct Job;
struct Other;

/// Handles jobs, has no handler for `Other`.
struct Worker;
impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Job| {})?;
        Ok(())
    }
}

/// Handles jobs on the pool, times itself and tracks its queue.
struct Pooled;
impl Agent for Pooled {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Pooled, _: &mut Ctx<Pooled>, _: Job| {})?;
        def.track_queue_depth().measure_handler_time();
        Ok(())
    }
}

const WORKER: &str = "scrape_counts_are_exact::Worker";
const POOLED: &str = "scrape_counts_are_exact::Pooled";

fn messages(e: &Exposition, agent_type: &str, outcome: &str) -> f64 {
    e.get(&format!(
        "agentry_agent_messages_total{{agent_type=\"{agent_type}\",outcome=\"{outcome}\"}}"
    ))
}

#[test]
fn a_scrape_reports_exact_counts_per_agent_type_dispatcher_and_environment() {
    let env = Env::builder()
        .autoshutdown(false)
        .handler_time_sampling(HandlerSampling::EVERY_RUN)
        .build()
        .expect("env");
    let h = env.handle().clone();
    let pool = ThreadPoolDispatcher::builder("pool")
        .threads(2)
        .build(&h)
        .expect("pool");
    let mut coop = h.new_coop();
    let workers = [coop.add(Worker), coop.add(Worker)];
    let pooled = [
        coop.add_with(Pooled, &pool.binder()),
        coop.add_with(Pooled, &pool.binder()),
        coop.add_with(Pooled, &pool.binder()),
    ];
    let coop = h.register_coop(coop).expect("registered");
    let server = Metrics::new(&h).serve("127.0.0.1:0").expect("serving");

    for (i, w) in workers.iter().enumerate() {
        for _ in 0..(100 + i) {
            w.send(Job);
        }
        w.send(Other);
    }
    for p in &pooled {
        for _ in 0..50 {
            p.send(Job);
        }
    }
    wait_until("every job is handled", || {
        let e = Exposition::parse(&scrape(server.local_addr()));
        messages(&e, WORKER, "handled") == 201.0
            && messages(&e, WORKER, "unhandled") == 2.0
            && messages(&e, POOLED, "handled") == 150.0
    });
    let e = Exposition::parse(&scrape(server.local_addr()));

    // Agent types: counts, outcomes adding up to what was sent, opt-in measurements.
    assert_eq!(
        e.get(&format!(
            "agentry_agent_type_agents{{agent_type=\"{WORKER}\"}}"
        )),
        2.0
    );
    assert_eq!(
        e.get(&format!(
            "agentry_agent_type_agents{{agent_type=\"{POOLED}\"}}"
        )),
        3.0
    );
    for outcome in ["insend_handled", "redirected", "dropped"] {
        assert_eq!(messages(&e, WORKER, outcome), 0.0, "{outcome}");
        assert_eq!(messages(&e, POOLED, outcome), 0.0, "{outcome}");
    }
    assert_eq!(messages(&e, POOLED, "unhandled"), 0.0);
    assert_eq!(
        e.get(&format!(
            "agentry_agent_queue_depth{{agent_type=\"{POOLED}\"}}"
        )),
        0.0
    );
    // Handler times (every run timed): a histogram with one count per job handled.
    let seconds = e.get(&format!(
        "agentry_agent_handler_seconds_sum{{agent_type=\"{POOLED}\"}}"
    ));
    assert!(seconds > 0.0 && seconds < 10.0, "{seconds}");
    let runs = format!("agentry_agent_handler_seconds_count{{agent_type=\"{POOLED}\"}}");
    assert_eq!(e.get(&runs), 150.0);
    let all =
        format!("agentry_agent_handler_seconds_bucket{{agent_type=\"{POOLED}\",le=\"+Inf\"}}");
    assert_eq!(e.get(&all), 150.0);
    // Not asked for: not reported (never a misleading zero).
    assert!(!e.samples.contains_key(&format!(
        "agentry_agent_queue_depth{{agent_type=\"{WORKER}\"}}"
    )));
    assert!(!e.samples.keys().any(|s| s.starts_with(
        "agentry_agent_handler_seconds_count{agent_type=\"scrape_counts_are_exact::Worker"
    )));

    // Dispatchers.
    assert_eq!(
        e.get("agentry_dispatcher_agents{dispatcher=\"pool\",kind=\"thread_pool\"}"),
        3.0
    );
    assert_eq!(
        e.get("agentry_dispatcher_threads{dispatcher=\"pool\",kind=\"thread_pool\"}"),
        2.0
    );
    assert_eq!(
        e.get("agentry_dispatcher_agents{dispatcher=\"default\",kind=\"one_thread\"}"),
        2.0
    );
    assert!(
        e.get("agentry_dispatcher_demands_handled_total{dispatcher=\"pool\",kind=\"thread_pool\"}")
            >= 150.0
    );

    // The environment.
    assert_eq!(e.get("agentry_agents"), 5.0);
    assert_eq!(e.get("agentry_coops"), 1.0);
    assert_eq!(e.get("agentry_messages_unhandled_total"), 2.0);
    assert_eq!(e.get("agentry_dead_letters_total"), 0.0);

    // Format: every family has a HELP and a TYPE, counters end in `_total`.
    for (name, kind) in &e.types {
        assert!(e.helps.contains_key(name), "{name}");
        assert_eq!(
            kind == "counter",
            name.ends_with("_total"),
            "{name}: {kind}"
        );
        assert!(name.starts_with("agentry_"), "{name}");
    }
    assert_eq!(e.types["agentry_agent_messages_total"], "counter");
    assert_eq!(e.types["agentry_agent_queue_depth"], "gauge");

    // The agents leave and their mboxes are dropped: their counts stay, the gauges fall.
    h.deregister_coop(coop, DeregReason::Normal)
        .expect("deregistered");
    drop((workers, pooled));
    wait_until("the agents are gone", || {
        let e = Exposition::parse(&scrape(server.local_addr()));
        e.get("agentry_agents") == 0.0
    });
    let e = Exposition::parse(&scrape(server.local_addr()));
    assert_eq!(messages(&e, WORKER, "handled"), 201.0);
    assert_eq!(messages(&e, POOLED, "handled"), 150.0);
    assert_eq!(
        e.get(&format!(
            "agentry_agent_type_agents{{agent_type=\"{WORKER}\"}}"
        )),
        0.0
    );
    assert!(!e.samples.contains_key(&format!(
        "agentry_agent_queue_depth{{agent_type=\"{POOLED}\"}}"
    )));

    server.stop();
    h.stop();
    env.run();
}
