use super::*;
use crate::RejectKind;
use proptest::prelude::*;

fn tag(name: &str, version: u32) -> TypeTag {
    TypeTag {
        name: name.into(),
        version,
    }
}

fn encoded(env: &Envelope) -> Vec<u8> {
    let mut buf = Vec::new();
    env.encode(&mut buf);
    buf
}

fn with_receipt(mut env: Envelope) -> Envelope {
    env.receipt = Some(Receipt {
        from: "abcdefghijklm".into(),
        seq: 41,
        low: 42,
    });
    env
}

#[test]
fn envelopes_round_trip_and_leave_the_body() {
    for env in [
        Envelope::message(tag("orders.Created", 1), Codec::Postcard, None),
        Envelope::message(tag("a", 7), Codec::PostcardZstd, Some(42)),
        Envelope::message(
            tag("a.b-c_d", u32::MAX),
            Codec::PostcardZstdDict(9),
            Some(u64::MAX),
        ),
        with_receipt(Envelope::message(tag("a", 1), Codec::Postcard, None)),
        Envelope::failure(Some(3), RemoteFailure::NoHandler),
        Envelope::failure(None, RemoteFailure::Rejected(RejectKind::WrongVersion)),
    ] {
        let mut bytes = encoded(&env);
        bytes.extend_from_slice(b"body");
        assert_eq!(Envelope::decode(&bytes), Ok((env.clone(), &b"body"[..])));
        let payload = env.to_nats_payload(b"body");
        assert_eq!(payload[0], WIRE_VERSION);
        assert_eq!(
            Envelope::from_nats_payload(&payload),
            Ok((env, Bytes::from_static(b"body")))
        );
    }
}

#[test]
fn the_bytes_are_the_documented_ones() {
    // A foreign client writes these bytes by hand (see the module's wire format).
    let mut env = Envelope::message(tag("t.P", 2), Codec::PostcardZstdDict(5), Some(7));
    env.receipt = Some(Receipt {
        from: "gw".into(),
        seq: 3,
        low: 1,
    });
    let expected: Vec<u8> = [
        &[1 | 2 | 8][..],
        &[3],
        b"t.P",
        &2u32.to_be_bytes(),
        &[2],
        &5u32.to_be_bytes(),
        &7u64.to_be_bytes(),
        &[2],
        b"gw",
        &3u64.to_be_bytes(),
        &1u64.to_be_bytes(),
    ]
    .concat();
    assert_eq!(encoded(&env), expected);
    assert_eq!(
        encoded(&Envelope::failure(None, RemoteFailure::AgentGone)),
        [4, 3]
    );
}

#[test]
fn every_failure_byte_round_trips_in_the_documented_order() {
    let documented = [
        RemoteFailure::NoRoute,
        RemoteFailure::NoHandler,
        RemoteFailure::AgentGone,
        RemoteFailure::Overloaded,
        RemoteFailure::HandlerPanicked,
        RemoteFailure::NoReply,
        RemoteFailure::Timeout,
        RemoteFailure::Shutdown,
        RemoteFailure::Rejected(RejectKind::UnknownType),
        RemoteFailure::Rejected(RejectKind::WrongVersion),
        RemoteFailure::Rejected(RejectKind::Malformed),
        RemoteFailure::Rejected(RejectKind::Oversized),
        RemoteFailure::ReplyEncode,
    ];
    for (i, f) in documented.into_iter().enumerate() {
        assert_eq!(usize::from(f.byte()), i + 1, "{f:?}");
        assert_eq!(RemoteFailure::from_byte(f.byte()), Some(f));
    }
    assert_eq!(RemoteFailure::from_byte(0), None);
    assert_eq!(RemoteFailure::from_byte(14), None);
}

#[test]
fn missing_and_malformed_fields_are_typed() {
    let malformed = |bytes: &[u8], field: &str| match Envelope::decode(bytes) {
        Err(DecodeError::Malformed { what, .. }) => assert_eq!(what, field, "{bytes:?}"),
        other => panic!("{bytes:?}: {other:?}"),
    };
    assert_eq!(
        Envelope::decode(&[0]),
        Err(DecodeError::MissingField("type"))
    );
    malformed(&[], "frame");
    malformed(&[0x20], "envelope");
    malformed(&[0x10], "frame");
    malformed(&[1, 3, b'a', b' ', b'b', 0, 0, 0, 1, 0], "type name");
    malformed(&[1, 0, 0, 0, 0, 1, 0], "type name");
    malformed(&[1, 1, b'a', 0, 0, 0, 1, 3], "codec");
    malformed(&[1, 1, b'a', 0, 0, 0, 1, 2, 0, 0], "frame");
    malformed(&[1, 1, b'a', 0, 0], "frame");
    malformed(&[4, 0], "failure");
    malformed(&[4, 14], "failure");
    malformed(&[5, 1, b'a', 0, 0, 0, 1, 0, 1], "envelope");
    malformed(&[2, 0, 0, 0], "frame");
    let receipt = |from: &[u8], seq: u64, low: u64| {
        [
            &[1 | 8, 1, b'a', 0, 0, 0, 1, 0][..],
            &[from.len() as u8],
            from,
            &seq.to_be_bytes(),
            &low.to_be_bytes(),
        ]
        .concat()
    };
    assert!(Envelope::decode(&receipt(b"gw", 1, 2)).is_ok());
    malformed(&receipt(b"gw", 1, 3), "receipt");
    malformed(&receipt(b"a.b", 1, 1), "receipt sender");
    malformed(&receipt(b"", 1, 1), "receipt sender");
    malformed(&receipt(b"g", 1, 1)[..20], "frame");
}

fn trace() -> TraceContext {
    TraceContext::new([0x11; 16], [0x22; 8], 1).expect("non-zero ids")
}

#[test]
fn a_trace_context_is_bit_4_and_25_bytes_after_everything_else() {
    let mut env = with_receipt(Envelope::message(tag("a", 1), Codec::Postcard, Some(5)));
    let untraced = encoded(&env);
    env.trace = Some(trace());
    let traced = encoded(&env);
    assert_eq!(traced[0], untraced[0] | 16);
    assert_eq!(traced[1..untraced.len()], untraced[1..]);
    assert_eq!(
        traced[untraced.len()..],
        [&[0x11; 16][..], &[0x22; 8], &[1]].concat()
    );
    let mut bytes = traced.clone();
    bytes.extend_from_slice(b"body");
    assert_eq!(Envelope::decode(&bytes), Ok((env.clone(), &b"body"[..])));
    // Truncated, or an all-zero id: typed rejections.
    let malformed = |bytes: &[u8], field: &str| match Envelope::decode(bytes) {
        Err(DecodeError::Malformed { what, .. }) => assert_eq!(what, field, "{bytes:?}"),
        other => panic!("{bytes:?}: {other:?}"),
    };
    malformed(&traced[..traced.len() - 1], "frame");
    let mut zero = traced.clone();
    zero[untraced.len()..untraced.len() + 16].fill(0);
    malformed(&zero, "trace context");
}

#[test]
fn nats_payloads_of_another_version_or_none_are_rejected() {
    let env = Envelope::message(tag("a", 1), Codec::Postcard, None);
    let mut payload = env.to_nats_payload(b"x").to_vec();
    for bad in [Vec::new(), {
        payload[0] = 1;
        payload
    }] {
        assert!(matches!(
            Envelope::from_nats_payload(&Bytes::from(bad)),
            Err(DecodeError::Malformed {
                what: "wire version",
                ..
            })
        ));
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        let _ = Envelope::decode(&bytes);
        let _ = Envelope::from_nats_payload(&Bytes::from(bytes));
    }

    #[test]
    fn valid_envelopes_round_trip(
        name in "[A-Za-z0-9_-]{1,10}(\\.[A-Za-z0-9_-]{1,10}){0,3}",
        version in 1u32..,
        codec in 0u8..3,
        dict in any::<u32>(),
        corr in proptest::option::of(any::<u64>()),
        body in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let codec = match codec { 0 => Codec::Postcard, 1 => Codec::PostcardZstd, _ => Codec::PostcardZstdDict(dict) };
        let env = Envelope::message(tag(&name, version), codec, corr);
        let payload = env.to_nats_payload(&body);
        prop_assert_eq!(Envelope::from_nats_payload(&payload), Ok((env, Bytes::from(body))));
    }
}

#[test]
fn a_name_seen_before_is_shared_and_the_list_stays_bounded() {
    let decode_name = |name: &str| {
        let env = Envelope::message(tag(name, 1), Codec::Postcard, None);
        let (decoded, _) = Envelope::decode(&encoded(&env)).expect("valid");
        decoded.tag.expect("a tag").name
    };
    let first = decode_name("orders.Created");
    for i in 0..100 {
        let other = decode_name(&format!("t.N{i}"));
        assert_eq!(&*other, format!("t.N{i}"));
    }
    assert_eq!(RECENT_NAMES.with(|r| r.borrow().len()), KNOWN_NAMES);
    let again = decode_name("orders.Created");
    assert_eq!(again, first);
    assert!(Arc::ptr_eq(&again, &decode_name("orders.Created")));
    // A bad name is still refused, seen names or not.
    assert!(matches!(
        Envelope::decode(&[1, 3, b'a', b' ', b'b', 0, 0, 0, 1, 0]),
        Err(DecodeError::Malformed {
            what: "type name",
            ..
        })
    ));
}
