//! Agents of one type share the layout of their states and handler table when their
//! definitions agree (`agent/layout.rs`); each still behaves exactly as its own definition
//! says: handlers and hooks are its own closures (with what they captured), and an agent
//! whose definition differs from its type's first one keeps its own states and
//! subscriptions.

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
