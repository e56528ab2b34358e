//! Queue groups: each message reaches exactly one member of each group (and every plain
//! subscriber); servers of one name share its requests.

mod common;

use common::*;

#[test]
fn each_message_reaches_one_member_of_the_group() {
    let Some(bin) = nats_or_skip("each_message_reaches_one_member_of_the_group") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let sender = nats_gateway(h, &server.url, "queues");
    let mut members = Vec::new();
    for _ in 0..3 {
        let gw = nats_gateway(h, &server.url, "queues");
        let (c, seen) = Collector::<Ping>::new(None);
        gw.subscribe_queue::<Ping>("jobs", "workers", &register(h, c))
            .expect("subscribe");
        members.push((gw, seen));
    }
    // Another group and a plain subscriber each get every message.
    let other = nats_gateway(h, &server.url, "queues");
    let (c, other_seen) = Collector::<Ping>::new(None);
    other
        .subscribe_queue::<Ping>("jobs", "auditors", &register(h, c))
        .expect("subscribe");
    let plain = nats_gateway(h, &server.url, "queues");
    let (c, plain_seen) = Collector::<Ping>::new(None);
    plain
        .subscribe::<Ping>("jobs", &register(h, c))
        .expect("subscribe");

    const N: u32 = 600;
    let jobs = sender.mbox("jobs").expect("name");
    for i in 0..N {
        jobs.send(Ping(i)).expect("buffered");
    }
    let total = || members.iter().map(|(_, s)| len(s)).sum::<usize>();
    let ok = eventually(|| {
        total() == N as usize && len(&other_seen) == N as usize && len(&plain_seen) == N as usize
    });
    assert!(
        ok,
        "group {:?}, auditors {}, plain {}; sender {:?}",
        members
            .iter()
            .map(|(g, s)| (len(s), g.stats()))
            .collect::<Vec<_>>(),
        len(&other_seen),
        len(&plain_seen),
        sender.stats()
    );
    let mut all: Vec<u32> = members
        .iter()
        .flat_map(|(_, s)| {
            s.lock()
                .expect("lock")
                .iter()
                .map(|p| p.0)
                .collect::<Vec<_>>()
        })
        .collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..N).collect::<Vec<_>>(),
        "each message exactly once in the group"
    );
    for (_, s) in &members {
        assert!(len(s) > 0, "NATS spreads the load over every member");
    }
    h.stop();
    env.run();
}

#[test]
fn servers_of_one_name_share_its_requests() {
    let Some(bin) = nats_or_skip("servers_of_one_name_share_its_requests") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let servers: Vec<_> = (0..2)
        .map(|_| {
            let gw = nats_gateway(h, &server.url, "services");
            assert!(matches!(
                gw.serve::<unregistered::Q, unregistered::R>("calc", &register(h, Adder)),
                Err(agentry_remote::SubscribeError::NotRegistered(_))
            ));
            gw.serve::<Add, Sum>("calc", &register(h, Adder))
                .expect("serve");
            gw
        })
        .collect();
    let client = nats_gateway(h, &server.url, "services");
    let calc = client.mbox("calc").expect("name");
    for i in 0..300 {
        assert_eq!(
            calc.request::<Add, Sum>(Add { a: i, b: 0 }, WAIT),
            Ok(Sum(i))
        );
    }
    let served: Vec<u64> = servers.iter().map(|g| g.stats().requests_served).collect();
    assert_eq!(
        served.iter().sum::<u64>(),
        300,
        "each request served once: {served:?}"
    );
    assert!(
        served.iter().all(|&n| n > 0),
        "both servers take a share: {served:?}"
    );
    h.stop();
    env.run();
}

mod unregistered {
    /// Not registered: `serve` refuses it.
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct Q;
    #[derive(serde::Serialize, serde::Deserialize)]
    pub struct R;
}
