//! `send_wait` awaits room under a full message limit (no thread blocked), gives the message
//! back as `Overloaded` when the room does not come in time, and `AgentGone` at once.

use agentry::limit::Overload;
use agentry::{Agent, Ctx, Define, DefineError, Env, SendError, mchain::Mchain};
use agentry_tokio::MboxExt;
use std::sync::mpsc;
use std::time::Duration;

struct Gate(mpsc::Receiver<()>);
#[derive(Debug, PartialEq)]
struct Item(u32);

struct Sink {
    out: Mchain,
}

impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.limit::<Item>(1, Overload::Drop)?;
        // Holds the agent's thread until the test opens the gate.
        def.on(|_: &mut Sink, _: &mut Ctx<Sink>, Gate(open): Gate| {
            let _ = open.recv_timeout(Duration::from_secs(10));
        })?;
        def.on(|s: &mut Sink, _: &mut Ctx<Sink>, Item(n): Item| s.out.send(n))?;
        Ok(())
    }
}

#[test]
fn send_wait_awaits_room_and_gives_the_message_back_otherwise() {
    let env = Env::new().expect("env");
    let out = Mchain::unbounded();
    let sink = env
        .handle()
        .register_agent(Sink { out: out.clone() })
        .expect("registered");
    let (open, gate) = mpsc::channel();
    sink.send(Gate(gate));
    sink.send(Item(1)); // waits behind the gate, holding the limit's one place
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let wait = Duration::from_secs(10);
    rt.block_on(async {
        // The caller's choice of a typed error: try_send refuses at once.
        assert!(matches!(
            sink.try_send(Item(2)),
            Err(SendError::Overloaded(Item(2)))
        ));
        // No room within 20 ms: the message comes back.
        let refused = sink.send_wait(Item(2), Duration::from_millis(20)).await;
        assert!(matches!(refused, Err(SendError::Overloaded(Item(2)))));
        // Awaits the room the gate's opening frees (the test task keeps running meanwhile).
        let waiting = tokio::spawn(sink.send_wait(Item(2), wait));
        tokio::task::yield_now().await;
        open.send(()).expect("the gate waits");
        waiting.await.expect("joined").expect("room came");
    });
    let got: Vec<u32> = (0..2)
        .map(|_| {
            out.recv(wait)
                .expect("handled")
                .downcast::<u32>()
                .expect("u32")
        })
        .collect();
    assert_eq!(got, [1, 2]);
    env.handle().stop();
    env.run();
    let gone = rt.block_on(sink.send_wait(Item(3), wait));
    assert!(matches!(gone, Err(SendError::AgentGone(Item(3)))));
}
