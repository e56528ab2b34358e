//! `ask` from async code: the reply, and every typed error of the synchronous request —
//! with no thread blocked (all on a current-thread runtime, whose one thread would deadlock
//! if any wait blocked it).

use agentry::limit::Overload;
use agentry::{
    Agent, Ctx, Define, DefineError, Env, ReplyTo, Request, RequestError, mchain::Mchain,
};
use agentry_tokio::{ChainExt, MboxExt};
use std::sync::mpsc;
use std::time::Duration;

struct Hold;
struct Boom;
struct Slow;

/// Answers `u32` at once, keeps `Hold` requests unanswered, panics on `Boom`; a `Slow`
/// waits for the test's gate, then answers, and answers the held requests too (late).
struct Service {
    held: Vec<ReplyTo<u32>>,
    started: Mchain,
    gate: mpsc::Receiver<()>,
}

impl Agent for Service {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.panic_reaction(agentry::PanicReaction::Ignore);
        def.limit::<Request<Slow, u32>>(1, Overload::Drop)?;
        def.on_request(|_: &mut Service, _: &mut Ctx<Service>, n: u32| n + 1)?;
        def.on(
            |s: &mut Service, _: &mut Ctx<Service>, r: Request<Hold, u32>| {
                s.held.push(r.into_parts().1);
            },
        )?;
        def.on_request(|_: &mut Service, _: &mut Ctx<Service>, _: Boom| -> u32 { panic!("boom") })?;
        def.on(
            |s: &mut Service, _: &mut Ctx<Service>, r: Request<Slow, u32>| {
                s.started.send(());
                let _ = s.gate.recv_timeout(Duration::from_secs(10));
                let _ = r.reply(7);
                for held in s.held.drain(..) {
                    let _ = held.reply(0); // their requesters timed out: discarded, counted
                }
            },
        )?;
        Ok(())
    }
}

#[test]
fn ask_gets_the_reply_and_every_typed_error() {
    let env = Env::new().expect("env");
    let started = Mchain::unbounded();
    let (open, gate) = mpsc::channel();
    let svc = env
        .handle()
        .register_agent(Service {
            held: Vec::new(),
            started: started.clone(),
            gate,
        })
        .expect("registered");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let long = Duration::from_secs(10);
    rt.block_on(async {
        assert_eq!(svc.ask::<u32, u32>(41, long).await, Ok(42));
        assert_eq!(
            svc.ask::<u32, String>(1, long).await,
            Err(RequestError::NoHandler)
        );
        assert_eq!(
            svc.ask::<Boom, u32>(Boom, long).await,
            Err(RequestError::HandlerPanicked)
        );
        assert_eq!(
            svc.ask::<Hold, u32>(Hold, Duration::from_millis(20)).await,
            Err(RequestError::Timeout)
        );
        // One `Slow` may wait: while the first is handled, the second waits, the third is
        // refused. The first answers the held request too: discarded and counted.
        let first = svc.ask::<Slow, u32>(Slow, long);
        started
            .recv_within(long)
            .await
            .expect("the first is being handled");
        let second = svc.ask::<Slow, u32>(Slow, long);
        let third = svc.ask::<Slow, u32>(Slow, long).await;
        assert_eq!(third, Err(RequestError::Overloaded));
        open.send(()).expect("gate");
        open.send(()).expect("gate");
        assert_eq!((first.await, second.await), (Ok(7), Ok(7)));
    });
    assert_eq!(env.handle().stats().replies_discarded, 1);

    // Many concurrent asks on one thread: none blocks it.
    let answers = rt.block_on(async {
        let asks: Vec<_> = (0..1000u32).map(|n| svc.ask::<u32, u32>(n, long)).collect();
        let mut sum = 0u64;
        for ask in asks {
            sum += u64::from(ask.await.expect("answered"));
        }
        sum
    });
    assert_eq!(answers, (1..=1000u64).sum::<u64>());
    env.handle().stop();
    env.run();

    // After the agent is gone: AgentGone, at once.
    let gone = rt.block_on(svc.ask::<u32, u32>(1, long));
    assert_eq!(gone, Err(RequestError::AgentGone));
}
