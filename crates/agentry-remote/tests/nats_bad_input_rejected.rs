//! Whatever another NATS client publishes — no envelope, unknown types, wrong versions,
//! malformed fields, garbage payloads, bombs — is rejected with a typed error, counted,
//! reported, answered (for requests) and never panics; the subscription keeps working.

mod common;

use agentry_remote::{DecodeError, Gateway, RemoteEvent, envelope};
use async_nats::HeaderMap;
use common::*;
use futures_util::StreamExt;

fn headers(fields: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in fields {
        h.insert(*k, *v);
    }
    h
}

fn ping_headers(version: &str, codec: &str) -> HeaderMap {
    headers(&[
        (envelope::HEADER_TYPE, "test.Ping"),
        (envelope::HEADER_VERSION, version),
        (envelope::HEADER_CODEC, codec),
    ])
}

#[test]
fn bad_input_is_rejected_counted_and_answered() {
    let Some(bin) = nats_or_skip("bad_input_is_rejected_counted_and_answered") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let (events, log) = event_log(h);
    let gw = Gateway::builder(&registry())
        .namespace("bad")
        .max_payload(1024)
        .events(&events)
        .connect_nats(h, &server.url)
        .expect("gateway");
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("in", &register(h, c))
        .expect("subscribe");
    gw.serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let raw = rt
        .block_on(async_nats::connect(server.url.as_str()))
        .expect("raw client");
    let subject = "bad.v1.m.in";
    let good = [7u8]; // postcard of Ping(7)
    let bomb = zstd::bulk::compress(&vec![0u8; 100_000], 1).expect("zstd");
    let cases: Vec<(HeaderMap, Vec<u8>)> = vec![
        (HeaderMap::new(), good.to_vec()), // no envelope
        (
            headers(&[
                (envelope::HEADER_TYPE, "nope.X"),
                (envelope::HEADER_VERSION, "1"),
                (envelope::HEADER_CODEC, "postcard"),
            ]),
            good.to_vec(),
        ), // unknown type
        (ping_headers("2", "postcard"), good.to_vec()), // wrong version
        (ping_headers("abc", "postcard"), good.to_vec()), // malformed version
        (ping_headers("1", "gzip"), good.to_vec()), // unknown codec
        (ping_headers("1", "postcard"), vec![0xff; 6]), // bad varint
        (ping_headers("1", "postcard"), vec![7, 0]), // trailing byte
        (ping_headers("1", "postcard"), vec![]), // truncated
        (ping_headers("1", "postcard"), vec![1; 2000]), // oversized
        (ping_headers("1", "postcard+zstd"), vec![1, 2, 3, 4, 5]), // corrupt zstd
        (ping_headers("1", "postcard+zstd;dict=42"), good.to_vec()), // unknown dictionary
        (ping_headers("1", "postcard+zstd"), bomb), // decompression bomb
        (headers(&[(envelope::HEADER_ERROR, "no-reply")]), vec![]), // a failure on a message subject
        (
            headers(&[
                (envelope::HEADER_TYPE, "test.Pong"),
                (envelope::HEADER_VERSION, "1"),
                (envelope::HEADER_CODEC, "postcard"),
            ]),
            good.to_vec(),
        ), // registered, not routed here
    ];
    let n = cases.len();
    rt.block_on(async {
        for (h, p) in cases {
            raw.publish_with_headers(subject, h, p.into())
                .await
                .expect("published");
        }
        raw.publish_with_headers(subject, ping_headers("1", "postcard"), good.to_vec().into())
            .await
            .expect("published");
        raw.flush().await.expect("flushed");
    });
    // The good message after the bad ones arrives: the subscription survived.
    assert!(eventually(|| len(&seen) == 1));
    assert_eq!(*seen.lock().expect("lock"), vec![Ping(7)]);
    let s = gw.stats();
    assert_eq!(s.received, n as u64 + 1);
    assert_eq!(
        (
            s.rejected_unknown_type,
            s.rejected_wrong_version,
            s.rejected_malformed,
            s.rejected_oversized,
            s.unrouted
        ),
        (1, 1, 9, 2, 1),
        "{s:?}"
    );
    assert!(eventually(|| {
        log.lock()
            .expect("lock")
            .iter()
            .filter(|e| matches!(e, RemoteEvent::Rejected { .. }))
            .count()
            == 13
    }));
    assert!(log.lock().expect("lock").iter().any(|e| matches!(
        e,
        RemoteEvent::Rejected { error: DecodeError::UnknownType { name, version: 1 }, .. } if name == "nope.X"
    )));

    // A bad request is answered with a typed failure, not left to time out.
    let answers: Vec<Option<String>> = rt.block_on(async {
        let mut out = Vec::new();
        for (h, p) in [
            (
                headers(&[
                    (envelope::HEADER_TYPE, "nope.X"),
                    (envelope::HEADER_VERSION, "1"),
                    (envelope::HEADER_CODEC, "postcard"),
                ]),
                vec![1],
            ),
            (
                headers(&[
                    (envelope::HEADER_TYPE, "calc.Add"),
                    (envelope::HEADER_VERSION, "1"),
                    (envelope::HEADER_CODEC, "postcard"),
                ]),
                vec![0xff],
            ),
            (
                headers(&[
                    (envelope::HEADER_TYPE, "calc.Add"),
                    (envelope::HEADER_VERSION, "1"),
                    (envelope::HEADER_CODEC, "postcard"),
                ]),
                vec![4, 6],
            ),
        ] {
            let reply = raw
                .request_with_headers("bad.v1.s.calc", h, p.into())
                .await
                .expect("answered");
            out.push(
                reply
                    .headers
                    .and_then(|h| h.get(envelope::HEADER_ERROR).map(|v| v.to_string())),
            );
        }
        out
    });
    assert_eq!(
        answers,
        vec![
            Some("rejected-unknown-type".into()),
            Some("rejected-malformed".into()),
            None
        ]
    );
    h.stop();
    env.run();
}

#[test]
fn receipts_from_any_client_are_checked_deduplicated_and_confirmed() {
    let Some(bin) = nats_or_skip("receipts_from_any_client_are_checked") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let gw = Gateway::builder(&registry())
        .namespace("bad")
        .connect_nats(h, &server.url)
        .expect("gateway");
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("in", &register(h, c))
        .expect("subscribe");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let raw = rt
        .block_on(async_nats::connect(server.url.as_str()))
        .expect("raw client");
    let mut confirmations = rt
        .block_on(raw.subscribe("bad.v1.r.zzzz.a"))
        .expect("subscribed");
    let with_receipt = |receipt: &str| {
        let mut h = ping_headers("1", "postcard");
        h.insert(envelope::HEADER_RECEIPT, receipt);
        h
    };
    rt.block_on(async {
        // A foreign sender "zzzz" sends its message 5 twice, then a bad receipt.
        for h in [
            with_receipt("zzzz 5 0"),
            with_receipt("zzzz 5 0"),
            with_receipt("zzzz 6 9"),
        ] {
            raw.publish_with_headers("bad.v1.m.in", h, vec![7u8].into())
                .await
                .expect("published");
        }
        raw.flush().await.expect("flushed");
    });
    assert!(eventually(|| gw.stats().received == 3));
    let s = gw.stats();
    assert_eq!(
        (s.delivered, s.duplicates_dropped, s.rejected_malformed),
        (1, 1, 1)
    );
    // Message 5 is confirmed to its sender (each copy; copies in one batch are one range):
    // ranges of (first u64 LE, count u32 LE) on `<ns>.v1.r.<sender>.a`.
    let msg = rt
        .block_on(async { tokio::time::timeout(WAIT, confirmations.next()).await })
        .expect("a confirmation within the wait")
        .expect("subscription open");
    let mut range = 5u64.to_le_bytes().to_vec();
    range.extend_from_slice(&1u32.to_le_bytes());
    assert_eq!(msg.payload.to_vec(), range);
    assert!(eventually(|| len(&seen) == 1));

    // Garbage on the gateway's own confirmation subject is rejected and counted. Its id is
    // in the receipt of any message it sends.
    let mut probe = rt
        .block_on(raw.subscribe("bad.v1.m.probe"))
        .expect("subscribed");
    rt.block_on(raw.flush()).expect("flushed");
    gw.mbox("probe").expect("name").send(Ping(1)).expect("sent");
    let sent = rt
        .block_on(async { tokio::time::timeout(WAIT, probe.next()).await })
        .expect("the probe within the wait")
        .expect("subscription open");
    let receipt = sent
        .headers
        .as_ref()
        .and_then(|h| h.get(envelope::HEADER_RECEIPT).map(|v| v.to_string()))
        .expect("a receipt header");
    let gateway_id = receipt
        .split(' ')
        .next()
        .expect("the sender's id")
        .to_owned();
    let before = gw.stats().rejected_malformed;
    rt.block_on(async {
        raw.publish(format!("bad.v1.r.{gateway_id}.a"), vec![1u8; 11].into())
            .await
            .expect("published");
        raw.flush().await.expect("flushed");
    });
    assert!(eventually(|| gw.stats().rejected_malformed == before + 1));
    h.stop();
    env.run();
}
