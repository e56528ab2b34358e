//! Every remote request ends in exactly one typed outcome: the reply, no responders (at
//! once), a timeout (and the late reply is counted), or the server's failure.

mod common;

use agentry::{Agent, Ctx, Define, DefineError, DeregReason};
use agentry_remote::{
    BridgeOptions, DecodeError, Gateway, RejectKind, RemoteFailure, RemoteReply, RemoteReplyTo,
    RemoteRequest, RequestError, SendError,
};
use common::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Keeps every request unanswered until told to release them.
struct Holder {
    held: Vec<RemoteReplyTo<Sum>>,
}
struct Release;

impl Agent for Holder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |h: &mut Holder, _: &mut Ctx<Holder>, r: RemoteRequest<Add, Sum>| {
                h.held.push(r.into_parts().1)
            },
        )?
        .on(|h: &mut Holder, _: &mut Ctx<Holder>, _: Release| {
            for r in h.held.drain(..) {
                let _ = r.reply(Sum(-1));
            }
        })?;
        Ok(())
    }
}

/// Drops every request.
struct Dropper;
impl Agent for Dropper {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Dropper, _: &mut Ctx<Dropper>, _: RemoteRequest<Add, Sum>| {})?;
        Ok(())
    }
}

/// An ordinary agent answering with `on_request`.
struct OnRequestAdder;
impl Agent for OnRequestAdder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on_request(
            |_: &mut OnRequestAdder, _: &mut Ctx<OnRequestAdder>, q: Add| Sum(q.a + q.b),
        )?;
        Ok(())
    }
}

/// An agent without any handler.
struct Deaf;
impl Agent for Deaf {}

fn setup(ns: &str) -> Option<(NatsServer, agentry::Env, Gateway, Gateway)> {
    let bin = nats_or_skip(ns)?;
    let server = NatsServer::start(&bin);
    let env = env();
    let client = nats_gateway(env.handle(), &server.url, ns);
    let server_gw = nats_gateway(env.handle(), &server.url, ns);
    Some((server, env, client, server_gw))
}

#[test]
fn replies_and_failures() {
    let Some((_server, env, client, srv)) = setup("outcomes") else {
        return;
    };
    let h = env.handle();
    srv.serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    let calc = client.mbox("calc").expect("name");
    assert_eq!(
        calc.request::<Add, Sum>(Add { a: 2, b: 3 }, WAIT),
        Ok(Sum(5))
    );

    // Nobody serves the name: NATS says so at once.
    let nobody = client.mbox("nobody").expect("name");
    assert_eq!(
        nobody.request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::NoResponders)
    );
    assert_eq!(client.stats().no_responders, 1);

    // The serving agent drops the request: NoReply, not a timeout.
    srv.serve::<Add, Sum>("dropper", &register(h, Dropper))
        .expect("serve");
    assert_eq!(
        client
            .mbox("dropper")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::Remote(RemoteFailure::NoReply))
    );

    // The serving agent is gone.
    let mut coop = h.new_coop();
    let gone = coop.add(Adder);
    let coop_id = h.register_coop(coop).expect("registered");
    srv.serve::<Add, Sum>("gone", &gone).expect("serve");
    h.deregister_coop(coop_id, DeregReason::Normal)
        .expect("deregistered");
    assert!(eventually(|| !gone.is_alive()));
    assert_eq!(
        client
            .mbox("gone")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::Remote(RemoteFailure::AgentGone))
    );

    // A served name without a route for this request type.
    assert_eq!(
        calc.request::<Ping, Pong>(Ping(1), WAIT),
        Err(RequestError::Remote(RemoteFailure::NoRoute))
    );

    // A reply of another type than expected.
    match calc.request::<Add, Pong>(Add { a: 1, b: 1 }, WAIT) {
        Err(RequestError::BadReply(DecodeError::UnexpectedType { expected, .. })) => {
            assert_eq!(expected, "test.Pong")
        }
        other => panic!("{other:?}"),
    }

    // Types that are not registered, queries that are too large.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Unregistered;
    assert_eq!(
        calc.request::<Unregistered, Sum>(Unregistered, WAIT),
        Err(RequestError::NotRegistered(std::any::type_name::<
            Unregistered,
        >()))
    );
    assert!(matches!(
        calc.request::<Blob, Sum>(Blob(vec![7; 2 * 1024 * 1024]), WAIT),
        Err(RequestError::Oversized { .. })
    ));
    assert!(matches!(
        calc.send(Blob(vec![7; 2 * 1024 * 1024])),
        Err(SendError::Oversized { .. })
    ));

    let s = client.stats();
    assert_eq!((s.no_responders, s.remote_failures, s.timed_out), (1, 3, 0));
    assert_eq!(s.rejected_unknown_type, 1, "the bad reply is counted");
    assert_eq!(srv.stats().unrouted, 1);
    h.stop();
    env.run();
}

#[test]
fn timeouts_and_late_replies() {
    let Some((_server, env, client, srv)) = setup("timeouts") else {
        return;
    };
    let h = env.handle();
    let holder = register(h, Holder { held: Vec::new() });
    srv.serve::<Add, Sum>("slow", &holder).expect("serve");
    let slow = client.mbox("slow").expect("name");
    assert_eq!(
        slow.request::<Add, Sum>(Add { a: 1, b: 1 }, Duration::from_millis(200)),
        Err(RequestError::Timeout)
    );
    // Non-blocking: the timeout arrives as a RemoteReply.
    let seen: Arc<Mutex<Vec<RemoteReply<Sum>>>> = Arc::default();
    let sink = register(h, Sink(Arc::clone(&seen)));
    let id = slow
        .send_request::<Add, Sum>(Add { a: 1, b: 1 }, Duration::from_millis(200), &sink)
        .expect("sent");
    assert!(eventually(|| seen.lock().expect("lock").len() == 1));
    {
        let got = seen.lock().expect("lock");
        assert_eq!(got[0].id, id);
        assert_eq!(got[0].result, Err(RequestError::Timeout));
    }
    // The server answers after all: both replies are counted as late, nothing is delivered.
    holder.send(Release);
    assert!(eventually(|| client.stats().late_replies == 2));
    let s = client.stats();
    assert_eq!(
        (s.timed_out, s.replies_received, s.pending_requests),
        (2, 0, 0)
    );
    assert_eq!(seen.lock().expect("lock").len(), 1);
    h.stop();
    env.run();
}

#[test]
fn an_ordinary_on_request_agent_serves_through_the_bridge() {
    let Some((_server, env, client, srv)) = setup("bridge") else {
        return;
    };
    let h = env.handle();
    srv.serve_on_request::<Add, Sum>(
        "plain",
        &register(h, OnRequestAdder),
        BridgeOptions::threads(2),
    )
    .expect("serve");
    srv.serve_on_request::<Add, Sum>("deaf", &register(h, Deaf), BridgeOptions::default())
        .expect("serve");
    let plain = client.mbox("plain").expect("name");
    for i in 0..50 {
        assert_eq!(
            plain.request::<Add, Sum>(Add { a: i, b: i }, WAIT),
            Ok(Sum(2 * i))
        );
    }
    assert_eq!(
        client
            .mbox("deaf")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::Remote(RemoteFailure::NoHandler))
    );
    assert_eq!(srv.stats().requests_served, 51);
    h.stop();
    env.run();
}

#[test]
fn a_request_the_server_cannot_decode_is_answered_rejected() {
    let Some((_server, env, client, _srv)) = setup("rejected") else {
        return;
    };
    // A server whose registry knows calc.Add only as version 2.
    let h = env.handle();
    let r2 = agentry_remote::Registry::new();
    #[derive(serde::Serialize, serde::Deserialize)]
    struct AddV2 {
        a: i64,
    }
    r2.register::<AddV2>("calc.Add", 2).expect("register");
    r2.register::<Sum>("calc.Sum", 1).expect("register");
    let url = client_url(&_server);
    let srv2 = Gateway::builder(&r2)
        .namespace("rejected")
        .connect_nats(h, &url)
        .expect("gateway");
    struct V2;
    impl Agent for V2 {
        fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
            def.on(
                |_: &mut V2, _: &mut Ctx<V2>, r: RemoteRequest<AddV2, Sum>| {
                    let a = r.query().a;
                    let _ = r.reply(Sum(a));
                },
            )?;
            Ok(())
        }
    }
    srv2.serve::<AddV2, Sum>("calc", &register(h, V2))
        .expect("serve");
    assert_eq!(
        client
            .mbox("calc")
            .expect("name")
            .request::<Add, Sum>(Add { a: 1, b: 1 }, WAIT),
        Err(RequestError::Remote(RemoteFailure::Rejected(
            RejectKind::WrongVersion
        )))
    );
    assert_eq!(srv2.stats().rejected_wrong_version, 1);
    h.stop();
    env.run();
}

fn client_url(s: &NatsServer) -> String {
    s.url.clone()
}

/// A request refused at once (the caller gets the error and its query back) has no other
/// outcome, even when its deadline passes during the call: with a full buffer and a zero
/// timeout, each of these requests ends either in the error returned or in one
/// `RemoteReply` (`Timeout`), never both. Needs no server: the gateway never connects.
#[test]
fn a_request_refused_at_once_has_no_other_outcome() {
    let env = env();
    let h = env.handle();
    // A loopback port held for the whole test by a listener that never answers: no NATS
    // server can take it meanwhile, and the client never gets the server's greeting.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let unreachable = format!("nats://{}", silent.local_addr().expect("addr"));
    let client = Gateway::builder(&registry())
        .namespace("refused")
        .outbound_capacity(1)
        .retry_initial_connect(true)
        .connect_nats(h, &unreachable)
        .expect("gateway");
    assert!(!client.is_connected());
    let calc = client.mbox("calc").expect("name");
    calc.send(Add { a: 0, b: 0 })
        .expect("the one buffered envelope");
    let seen: Arc<Mutex<Vec<RemoteReply<Sum>>>> = Arc::default();
    let sink = register(h, Sink(Arc::clone(&seen)));
    const N: usize = 2_000;
    let (mut refused, mut accepted) = (0, Vec::new());
    for a in 0..N as i64 {
        match calc.send_request::<Add, Sum>(Add { a, b: 0 }, Duration::ZERO, &sink) {
            Err(SendError::BufferFull(q)) => {
                assert_eq!(q.a, a, "the refused query is given back");
                refused += 1;
            }
            Ok(id) => accepted.push(id),
            Err(e) => panic!("unexpected refusal {e:?}"),
        }
    }
    assert_eq!(refused + accepted.len(), N);
    assert!(eventually(
        || seen.lock().expect("lock").len() >= accepted.len()
    ));
    std::thread::sleep(Duration::from_millis(100)); // any second outcome would arrive now
    let seen = std::mem::take(&mut *seen.lock().expect("lock"));
    let mut ended: Vec<_> = seen.iter().map(|r| r.id).collect();
    ended.sort_unstable();
    accepted.sort_unstable();
    assert_eq!(
        ended, accepted,
        "a reply for each accepted request, none for a refused one"
    );
    assert!(
        seen.iter().all(|r| r.result == Err(RequestError::Timeout)),
        "{seen:?}"
    );
    assert_eq!(client.stats().pending_requests, 0);
    client.close();
    h.stop();
    env.run();
    drop(silent);
}
