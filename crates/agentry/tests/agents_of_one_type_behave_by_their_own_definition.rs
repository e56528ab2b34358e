//! Agents of one type share the layout of their states and handler table when their
//! definitions agree (`agent/layout.rs`); each still behaves exactly as its own definition
//! says: handlers and hooks are its own closures (with what they captured), and an agent
//! whose definition differs from its type's first one keeps its own states and
//! subscriptions. Handlers that capture nothing are shared by the agents of a type too
//! (`agent/handlers/shared.rs`): each agent still runs the closure its own definition gave.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env, MultiMbox};
use common::{Log, recv};
use std::sync::mpsc::{self, Sender};

struct Ping;
struct Go;
struct News;

/// One agent type, three shapes of definition chosen by `shape`.
struct Shaped {
    shape: Shape,
    log: Log,
    /// Where it reports that it handled `Ping` (and in which state).
    done: Sender<String>,
}

#[derive(Clone)]
enum Shape {
    /// `Ping` in the default state, answered with `tag` (captured by the handler).
    Plain { tag: &'static str },
    /// States `warm` ⊃ `hot`; `Go` moves to `hot` (enter/exit hooks log); `Ping` only in
    /// `warm` (inherited by `hot`).
    Nested { tag: &'static str },
    /// `News` from a multi mbox; no `Ping` handler at all.
    Listener { news: MultiMbox },
}

impl Agent for Shaped {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        match self.shape.clone() {
            Shape::Plain { tag } => {
                def.on(move |s: &mut Shaped, ctx: &mut Ctx<Shaped>, Ping| {
                    let _ = s.done.send(format!("{tag} ping in {}", ctx.state_name()));
                })?;
            }
            Shape::Nested { tag } => {
                let warm = def.state("warm")?;
                let hot = def.substate(warm, "hot")?;
                def.start_in(warm)?
                    .on_enter(hot, move |s: &mut Shaped, _: &mut Ctx<Shaped>| {
                        s.log.push(format!("{tag} enter hot"));
                    })?
                    .on_exit(warm, move |s: &mut Shaped, _: &mut Ctx<Shaped>| {
                        s.log.push(format!("{tag} exit warm"));
                    })?;
                def.in_state(warm)
                    .on(move |s: &mut Shaped, ctx: &mut Ctx<Shaped>, Ping| {
                        let _ = s.done.send(format!("{tag} ping in {}", ctx.state_name()));
                    })?;
                def.in_state(warm)
                    .on(move |_: &mut Shaped, ctx: &mut Ctx<Shaped>, Go| {
                        ctx.change_state(hot).expect("hot");
                    })?;
            }
            Shape::Listener { news } => {
                def.from(&news).on(
                    |s: &mut Shaped, _: &mut Ctx<Shaped>, _: std::sync::Arc<News>| {
                        let _ = s.done.send("listener news".to_owned());
                    },
                )?;
            }
        }
        Ok(())
    }

    fn on_finish(&mut self, ctx: &mut Ctx<Self>) {
        self.log.push(format!("finish in {}", ctx.state_name()));
    }
}

#[test]
fn interleaved_definitions_of_one_type_each_keep_their_own_behaviour() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let news = h.create_mbox();
    let log = Log::default();
    let (done, rx) = mpsc::channel();
    let shapes = [
        Shape::Plain { tag: "a" },
        Shape::Nested { tag: "b" },
        Shape::Plain { tag: "c" },
        Shape::Listener { news: news.clone() },
        Shape::Nested { tag: "d" },
        Shape::Plain { tag: "e" },
    ];
    let mut coop = h.new_coop();
    let mboxes: Vec<_> = shapes
        .iter()
        .map(|shape| {
            coop.add(Shaped {
                shape: shape.clone(),
                log: log.clone(),
                done: done.clone(),
            })
        })
        .collect();
    let coop = h.register_coop(coop).expect("register");
    let runner = std::thread::spawn(move || env.run());

    for mbox in &mboxes {
        mbox.send(Ping);
    }
    let mut answers: Vec<String> = (0..5).map(|_| recv(&rx)).collect();
    answers.sort();
    assert_eq!(
        answers,
        [
            "a ping in default",
            "b ping in warm",
            "c ping in default",
            "d ping in warm",
            "e ping in default",
        ]
    );
    news.send(News);
    assert_eq!(recv(&rx), "listener news");

    // The nested ones move to `hot` (their own hooks run) and still answer there.
    mboxes[1].send(Go);
    mboxes[4].send(Go);
    mboxes[1].send(Ping);
    mboxes[4].send(Ping);
    let mut answers: Vec<String> = (0..2).map(|_| recv(&rx)).collect();
    answers.sort();
    assert_eq!(answers, ["b ping in hot", "d ping in hot"]);
    let mut hooks = log.take();
    hooks.sort();
    assert_eq!(hooks, ["b enter hot", "d enter hot"]);

    h.deregister_coop(coop, agentry::DeregReason::Normal)
        .expect("deregister");
    h.stop();
    let stats = runner.join().expect("env thread");
    // The listener had no `Ping` handler: its `Ping` went unhandled, nobody else's did.
    assert_eq!(stats.unhandled, 1);
    let mut finished = log.take();
    finished.sort();
    assert_eq!(
        finished,
        [
            "b exit warm",
            "d exit warm",
            "finish in default",
            "finish in default",
            "finish in default",
            "finish in default",
            "finish in hot",
            "finish in hot",
        ]
    );
}

/// One agent type whose two handlers capture nothing, or capture per agent, by `variant`:
/// every variant declares the same layout (`Ping`, then `Go`, in the default state).
struct Twin {
    variant: u8,
    done: Sender<String>,
}

impl Agent for Twin {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        match self.variant {
            0 => {
                def.on(|t: &mut Twin, _: &mut Ctx<Twin>, Ping| t.report("zero ping"))?
                    .on(Twin::on_go)?;
            }
            1 => {
                def.on(|t: &mut Twin, _: &mut Ctx<Twin>, Ping| t.report("one ping"))?
                    .on(Twin::on_go)?;
            }
            2 => {
                // Variant 0's second handler first: another layout.
                def.on(Twin::on_go)?
                    .on(|t: &mut Twin, _: &mut Ctx<Twin>, Ping| t.report("two ping"))?;
            }
            n => {
                let tag = format!("{n} ping");
                def.on(move |t: &mut Twin, _: &mut Ctx<Twin>, Ping| t.report(&tag))?
                    .on(Twin::on_go)?;
            }
        }
        Ok(())
    }
}

impl Twin {
    fn report(&self, what: &str) {
        let _ = self.done.send(format!("{} {what}", self.variant));
    }

    fn on_go(&mut self, _: &mut Ctx<Self>, _: Go) {
        self.report("go by fn");
    }
}

#[test]
fn agents_sharing_capture_free_handlers_each_run_the_closures_their_definition_gave() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let pool = agentry::disp::ThreadPoolDispatcher::builder("twins")
        .threads(2)
        .build(&env)
        .expect("pool");
    let (done, rx) = mpsc::channel();
    // The first agent builds the layout, the second decides the sharing (variant 0's
    // closures); the others declare the same layout with other closures or captures.
    let variants = [0, 0, 1, 0, 7, 1, 2, 0, 9, 0];
    let mut coop = h.new_coop();
    let mboxes: Vec<_> = variants
        .iter()
        .map(|&variant| {
            let twin = Twin {
                variant,
                done: done.clone(),
            };
            coop.add_with(twin, &pool.binder())
        })
        .collect();
    h.register_coop(coop).expect("register");
    let runner = std::thread::spawn(move || env.run());

    for _ in 0..50 {
        for mbox in &mboxes {
            mbox.send(Ping);
            mbox.send(Go);
        }
    }
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..100 * variants.len() {
        *answers.entry(recv(&rx)).or_default() += 1;
    }
    // Five agents of variant 0, two of 1, one each of 2, 7 and 9: 50 of each message each.
    let expected = [
        ("0 go by fn", 250),
        ("0 zero ping", 250),
        ("1 go by fn", 100),
        ("1 one ping", 100),
        ("2 go by fn", 50),
        ("2 two ping", 50),
        ("7 7 ping", 50),
        ("7 go by fn", 50),
        ("9 9 ping", 50),
        ("9 go by fn", 50),
    ];
    let expected: Vec<(String, usize)> = expected.iter().map(|&(a, n)| (a.to_owned(), n)).collect();
    assert_eq!(answers.into_iter().collect::<Vec<_>>(), expected);
    h.stop();
    let stats = runner.join().expect("env thread");
    assert_eq!(stats.unhandled, 0);
}
