//! An `Mchain` received with `.await`: woken by the push (no thread blocked: sender and
//! receiver share a current-thread runtime's one thread), with a timeout, and `Closed` once
//! the chain is closed and empty; an abandoned receive leaves no waiter behind.

use agentry::mchain::Close;
use agentry::{Agent, Ctx, Define, DefineError, Env, RecvError, mchain::Mchain};
use agentry_tokio::ChainExt;
use std::time::Duration;

struct Square(u64);

struct Squarer {
    answers: Mchain,
}

impl Agent for Squarer {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|s: &mut Squarer, _: &mut Ctx<Squarer>, Square(n): Square| {
            s.answers.send(n * n);
        })?;
        Ok(())
    }
}

#[test]
fn a_chain_is_awaited_without_blocking_a_thread() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let wait = Duration::from_secs(10);
    let chain = Mchain::unbounded();
    let sum = rt.block_on(async {
        let receiver = {
            let chain = chain.clone();
            tokio::spawn(async move {
                let mut sum = 0u64;
                while let Ok(envelope) = chain.recv_future().await {
                    sum += envelope.downcast::<u64>().expect("u64");
                }
                sum
            })
        };
        for n in 1..=100u64 {
            chain.send(n);
            tokio::task::yield_now().await;
        }
        chain.close(Close::RetainContent);
        receiver.await.expect("joined")
    });
    assert_eq!(sum, 5050);
    rt.block_on(async {
        let closed = chain.recv_within(wait).await;
        assert_eq!(closed.err(), Some(RecvError::Closed));
        let open = Mchain::unbounded();
        let timed_out = open.recv_within(Duration::from_millis(5)).await;
        assert_eq!(timed_out.err(), Some(RecvError::Timeout));
        open.send(1u8);
        assert!(open.recv_within(wait).await.expect("queued").is::<u8>());
        assert_eq!(open.stats().received, 1);
    });
}

#[test]
fn agents_answer_an_awaiting_task() {
    let env = Env::new().expect("env");
    let answers = Mchain::unbounded();
    let squarer = env
        .handle()
        .register_agent(Squarer {
            answers: answers.clone(),
        })
        .expect("registered");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let got = rt.block_on(async {
        let mut got = Vec::new();
        for n in 1..=5 {
            squarer.send(Square(n));
            let answer = answers.recv_within(Duration::from_secs(10)).await;
            got.push(answer.expect("answered").downcast::<u64>().expect("u64"));
        }
        got
    });
    assert_eq!(got, [1, 4, 9, 16, 25]);
    env.handle().stop();
    env.run();
}
