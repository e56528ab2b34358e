//! Whatever another NATS client publishes — no envelope, unknown types, wrong versions,
//! malformed fields, garbage payloads, bombs — is rejected with a typed error, counted,
//! reported, answered (for requests) and never panics; the subscription keeps working.

mod common;

use agentry_remote::envelope::{Envelope, WIRE_VERSION};
use agentry_remote::{DecodeError, Gateway, RejectKind, RemoteEvent, RemoteFailure};
use common::*;
use futures_util::StreamExt;

const POSTCARD: &[u8] = &[0];
const ZSTD: &[u8] = &[1];

/// A NATS payload written by hand, byte by byte, as a foreign client would (the wire format
/// in `agentry_remote::envelope`): version, envelope flags, type name, version, codec,
/// [receipt], body.
fn message(
    name: &str,
    version: u32,
    codec: &[u8],
    receipt: Option<(&str, u64, u64)>,
    body: &[u8],
) -> Vec<u8> {
    let flags = if receipt.is_some() { 1 | 8 } else { 1 };
    let mut p = vec![WIRE_VERSION, flags, name.len() as u8];
    p.extend_from_slice(name.as_bytes());
    p.extend_from_slice(&version.to_be_bytes());
    p.extend_from_slice(codec);
    if let Some((from, seq, low)) = receipt {
        p.push(from.len() as u8);
        p.extend_from_slice(from.as_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&low.to_be_bytes());
    }
    p.extend_from_slice(body);
    p
}

fn ping(codec: &[u8], body: &[u8]) -> Vec<u8> {
    message("test.Ping", 1, codec, None, body)
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
    let cases: Vec<Vec<u8>> = vec![
        good.to_vec(),                                  // no envelope (no wire version)
        message("nope.X", 1, POSTCARD, None, &good),    // unknown type
        message("test.Ping", 2, POSTCARD, None, &good), // wrong version
        ping(POSTCARD, &good)[..5].to_vec(),            // truncated envelope
        ping(&[9], &good),                              // unknown codec
        ping(POSTCARD, &[0xff; 6]),                     // bad varint
        ping(POSTCARD, &[7, 0]),                        // trailing byte
        ping(POSTCARD, &[]),                            // truncated body
        ping(POSTCARD, &[1; 2000]),                     // oversized
        ping(ZSTD, &[1, 2, 3, 4, 5]),                   // corrupt zstd
        ping(&[2, 0, 0, 0, 42], &good),                 // unknown dictionary
        ping(ZSTD, &bomb),                              // decompression bomb
        vec![WIRE_VERSION, 4, 6],                       // a failure on a message subject
        message("test.Pong", 1, POSTCARD, None, &good), // registered, not routed here
    ];
    let n = cases.len();
    rt.block_on(async {
        for p in cases {
            raw.publish(subject, p.into()).await.expect("published");
        }
        raw.publish(subject, ping(POSTCARD, &good).into())
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
    let answers: Vec<Option<RemoteFailure>> = rt.block_on(async {
        let mut out = Vec::new();
        for p in [
            message("nope.X", 1, POSTCARD, None, &[1]),
            message("calc.Add", 1, POSTCARD, None, &[0xff]),
            message("calc.Add", 1, POSTCARD, None, &[4, 6]),
        ] {
            let reply = raw
                .request("bad.v1.s.calc", p.into())
                .await
                .expect("answered");
            let (envelope, _) = Envelope::from_nats_payload(&reply.payload).expect("an envelope");
            out.push(envelope.failure);
        }
        out
    });
    assert_eq!(
        answers,
        vec![
            Some(RemoteFailure::Rejected(RejectKind::UnknownType)),
            Some(RemoteFailure::Rejected(RejectKind::Malformed)),
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
    let with_receipt =
        |seq: u64, low: u64| message("test.Ping", 1, POSTCARD, Some(("zzzz", seq, low)), &[7]);
    rt.block_on(async {
        // A foreign sender "zzzz" sends its message 5 twice, then a bad receipt (its floor
        // above its sequence).
        for p in [with_receipt(5, 0), with_receipt(5, 0), with_receipt(6, 9)] {
            raw.publish("bad.v1.m.in", p.into())
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
    // ranges of (first u64, count u32), big endian, on `<ns>.v1.r.<sender>.a`.
    let msg = rt
        .block_on(async { tokio::time::timeout(WAIT, confirmations.next()).await })
        .expect("a confirmation within the wait")
        .expect("subscription open");
    let mut range = 5u64.to_be_bytes().to_vec();
    range.extend_from_slice(&1u32.to_be_bytes());
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
    let (envelope, _) = Envelope::from_nats_payload(&sent.payload).expect("an envelope");
    let gateway_id = envelope.receipt.expect("a receipt").from;
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
