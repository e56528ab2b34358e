//! An io dispatcher's, a listener's and two gateways' counters appear in a scrape with their
//! labels and exact values: bytes and connections over real TCP, envelopes over a direct link
//! between two gateways (no broker needed).

#![cfg(all(feature = "net", feature = "remote"))]

mod common;

use agentry::{Agent, Ctx, Define, DefineError, Env};
use agentry_metrics::{BuildError, Metrics};
use agentry_net::{Accepted, ConnOwner, IoDispatcher, ListenerConfig, Received};
use agentry_remote::{Gateway, Registry};
use common::{Exposition, wait_until};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::time::Duration;

#[derive(Serialize, Deserialize, Clone, Debug)]
struct Ping(u32);

/// Takes pings and connections, does nothing with them.
struct Sink;
impl Agent for Sink {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|_: &mut Sink, _: &mut Ctx<Sink>, _: Ping| {})?
            .on(|_: &mut Sink, _: &mut Ctx<Sink>, _: Accepted| {})?
            .on(|_: &mut Sink, _: &mut Ctx<Sink>, _: Received| {})?;
        Ok(())
    }
}

#[test]
fn tcp_and_gateway_counters_appear_with_their_labels() {
    let env = Env::builder().autoshutdown(false).build().expect("env");
    let h = env.handle().clone();
    let io = IoDispatcher::new(&h, "io").expect("io dispatcher");
    let mut coop = h.new_coop();
    let sink = coop.add_with(Sink, &io.binder());
    h.register_coop(coop).expect("registered");
    let listener = io
        .listen(
            "127.0.0.1:0".parse().expect("addr"),
            ListenerConfig::default(),
            ConnOwner::Mbox(sink.clone()),
        )
        .expect("listening");

    let registry = Registry::new();
    registry
        .register::<Ping>("test.Ping", 1)
        .expect("registered");
    let server = Gateway::builder(&registry)
        .namespace("metrics")
        .listen_link(&h, "127.0.0.1:0")
        .expect("link listening");
    let client = Gateway::builder(&registry)
        .namespace("metrics")
        .connect_link(&h, server.local_addr().expect("bound"))
        .expect("link connecting");
    assert!(server.wait_connected(Duration::from_secs(10)));
    assert!(client.wait_connected(Duration::from_secs(10)));
    server
        .subscribe::<Ping>("pings", &sink)
        .expect("subscribed");

    let metrics = Metrics::builder(&h)
        .io_dispatcher(&io)
        .listener("api", &listener)
        .gateway("server", &server)
        .gateway("client", &client)
        .build()
        .expect("exporter");

    let mut tcp = std::net::TcpStream::connect(listener.local_addr()).expect("connected");
    tcp.write_all(b"hello").expect("sent");
    let pings = client.mbox("pings").expect("name");
    for i in 0..25 {
        pings.send(Ping(i)).expect("buffered");
    }
    wait_until("the bytes and the pings arrive", || {
        let e = Exposition::parse(&metrics.render());
        e.get("agentry_net_received_bytes_total{io_dispatcher=\"io\"}") == 5.0
            && e.get("agentry_remote_delivered_total{gateway=\"server\"}") == 25.0
    });
    let e = Exposition::parse(&metrics.render());
    assert_eq!(
        e.get("agentry_net_connections_accepted_total{io_dispatcher=\"io\"}"),
        1.0
    );
    assert_eq!(
        e.get("agentry_net_connections_open{io_dispatcher=\"io\"}"),
        1.0
    );
    assert_eq!(
        e.get("agentry_net_listener_accepted_total{listener=\"api\"}"),
        1.0
    );
    assert_eq!(
        e.get("agentry_net_listener_connections_open{listener=\"api\"}"),
        1.0
    );
    assert_eq!(
        e.family("agentry_net_connections_closed_total").len(),
        11,
        "one series per close reason"
    );
    assert_eq!(e.get("agentry_remote_sent_total{gateway=\"client\"}"), 25.0);
    assert_eq!(
        e.get("agentry_remote_received_total{gateway=\"server\"}"),
        25.0
    );
    assert_eq!(e.get("agentry_remote_connected{gateway=\"client\"}"), 1.0);
    assert_eq!(e.get("agentry_remote_connected{gateway=\"server\"}"), 1.0);
    assert_eq!(
        e.get("agentry_remote_rejected_total{gateway=\"server\",reason=\"unknown_type\"}"),
        0.0
    );

    // The peer closes: the connection is counted closed by the peer.
    drop(tcp);
    wait_until("the close is counted", || {
        let e = Exposition::parse(&metrics.render());
        e.get("agentry_net_connections_closed_total{io_dispatcher=\"io\",reason=\"peer\"}") == 1.0
            && e.get("agentry_net_connections_open{io_dispatcher=\"io\"}") == 0.0
    });

    // Two sources of a kind cannot share a name.
    assert_eq!(
        Metrics::builder(&h)
            .gateway("same", &server)
            .gateway("same", &client)
            .build()
            .map(|_| ()),
        Err(BuildError::DuplicateName {
            kind: "gateway",
            name: "same".into()
        })
    );

    client.close();
    server.close();
    h.stop();
    env.run();
}
