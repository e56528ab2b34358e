use super::*;
use crate::compression::Codec;
use crate::envelope::TypeTag;
use crate::error::RemoteFailure;
use proptest::prelude::*;

fn body(buf: &[u8]) -> &[u8] {
    let (b, used) = split(buf).expect("a whole frame");
    assert_eq!(used, buf.len());
    b
}

#[test]
fn hello_and_heartbeat_round_trip() {
    let mut buf = Vec::new();
    encode_hello(&mut buf, "app", "gw123");
    assert_eq!(
        Frame::decode(body(&buf)),
        Ok(Frame::Hello {
            protocol: PROTOCOL,
            namespace: "app",
            gateway: "gw123"
        })
    );
    buf.clear();
    encode_heartbeat(&mut buf);
    assert_eq!(Frame::decode(body(&buf)), Ok(Frame::Heartbeat));
}

#[test]
fn messages_round_trip() {
    let env = Envelope::message(
        TypeTag {
            name: "orders.Created".into(),
            version: 3,
        },
        Codec::PostcardZstdDict(5),
        Some(77),
    );
    let mut buf = Vec::new();
    encode_message(
        &mut buf,
        "app.v1.s.calc",
        Some("app.v1.r.gw.77"),
        &env,
        b"payload",
    );
    assert_eq!(
        Frame::decode(body(&buf)),
        Ok(Frame::Message {
            subject: "app.v1.s.calc",
            reply: Some("app.v1.r.gw.77"),
            envelope: env,
            payload: b"payload",
        })
    );
    let fail = Envelope::failure(Some(9), RemoteFailure::AgentGone);
    buf.clear();
    encode_message(&mut buf, "app.v1.r.gw.9", None, &fail, b"");
    assert!(matches!(
        Frame::decode(body(&buf)),
        Ok(Frame::Message { envelope, reply: None, .. }) if envelope == fail
    ));
}

#[test]
fn bad_frames_are_typed_errors() {
    let cases: &[&[u8]] = &[
        b"",
        &[0],
        &[9],
        &[KIND_HELLO, b'X', b'G', b'R', b'L', 1, 0, 0],
        &[
            KIND_HELLO, b'A', b'G', b'R', b'L', 1, 3, b'a', b'.', b'b', 1, b'g',
        ],
        &[KIND_MESSAGE, 0x80],
        &[KIND_MESSAGE, 0, 0, 5, b'a'],
        &[KIND_MESSAGE, 0, 0, 1, b'a', 0],
        // Envelopes: a bad codec, a bad failure, an unknown envelope flag, a failure with a
        // type, a truncated receipt.
        &[KIND_MESSAGE, 0, 0, 1, b'a', 1, 1, b'T', 0, 0, 0, 1, 7],
        &[KIND_MESSAGE, 0, 0, 1, b'a', 4, 99],
        &[KIND_MESSAGE, 0, 0, 1, b'a', 0x10],
        &[KIND_MESSAGE, 0, 0, 1, b'a', 5, 1, b'T', 0, 0, 0, 1, 0, 1],
        &[
            KIND_MESSAGE,
            0,
            0,
            1,
            b'a',
            9,
            1,
            b'T',
            0,
            0,
            0,
            1,
            0,
            2,
            b'g',
            b'w',
            0,
        ],
        &[KIND_MESSAGE, 0, 0, 2, 0xff, 0xfe],
    ];
    for c in cases {
        assert!(Frame::decode(c).is_err(), "{c:?}");
    }
    // No type and no failure: missing type.
    assert_eq!(
        Frame::decode(&[KIND_MESSAGE, 0, 0, 1, b'a', 0]),
        Err(DecodeError::MissingField("type"))
    );
}

#[test]
fn split_waits_for_whole_frames() {
    let mut buf = Vec::new();
    encode_heartbeat(&mut buf);
    assert_eq!(split(&buf[..3]), None);
    assert_eq!(split(&buf[..4]), None);
    assert!(split(&buf).is_some());
    assert_eq!(peek_len(&[0, 0, 1, 0]), Some(256));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Frame::decode(&bytes);
        let _ = split(&bytes);
    }

    #[test]
    fn mutated_frames_never_panic(
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let env = Envelope::message(TypeTag { name: "t.x".into(), version: 1 }, Codec::PostcardZstd, Some(1));
        let mut buf = Vec::new();
        encode_message(&mut buf, "ns.v1.m.x", Some("ns.v1.r.g.1"), &env, &payload);
        let mut b = buf[4..].to_vec();
        for (i, v) in flips { let n = b.len(); b[i % n] ^= v; }
        let _ = Frame::decode(&b);
    }

    #[test]
    fn messages_round_trip_any_payload(payload in proptest::collection::vec(any::<u8>(), 0..300), corr in proptest::option::of(any::<u64>())) {
        let env = Envelope::message(TypeTag { name: "t.x".into(), version: 2 }, Codec::Postcard, corr);
        let mut buf = Vec::new();
        encode_message(&mut buf, "ns.v1.m.x", None, &env, &payload);
        let decoded = Frame::decode(body(&buf));
        prop_assert_eq!(decoded, Ok(Frame::Message { subject: "ns.v1.m.x", reply: None, envelope: env, payload: &payload }));
    }
}
