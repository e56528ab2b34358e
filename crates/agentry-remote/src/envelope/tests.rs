use super::*;
use proptest::prelude::*;

fn tag(name: &str, version: u32) -> TypeTag {
    TypeTag {
        name: name.into(),
        version,
    }
}

#[test]
fn headers_round_trip() {
    for env in [
        Envelope::message(tag("orders.Created", 1), Codec::Postcard, None),
        Envelope::message(tag("a", 7), Codec::PostcardZstd, Some(42)),
        Envelope::message(
            tag("a.b-c_d", u32::MAX),
            Codec::PostcardZstdDict(9),
            Some(u64::MAX),
        ),
        Envelope::failure(Some(3), RemoteFailure::NoHandler),
        Envelope::failure(
            None,
            RemoteFailure::Rejected(crate::RejectKind::WrongVersion),
        ),
    ] {
        let h = env.to_headers();
        assert_eq!(Envelope::from_headers(&h), Ok(env));
    }
}

#[test]
fn receipts_round_trip_and_bad_ones_are_typed_errors() {
    let mut env = Envelope::message(tag("a", 1), Codec::Postcard, None);
    env.receipt = Some(Receipt {
        from: "abcdefghijklm".into(),
        seq: 41,
        low: 42,
    });
    assert_eq!(Envelope::from_headers(&env.to_headers()), Ok(env.clone()));
    for bad in [
        "",
        "abc",
        "abc 1",
        "abc 1 2 3",
        "a.b 1 1",
        "abc x 1",
        "abc 1 +1",
        "abc 1 3",
        "abc  1 1",
    ] {
        let mut h = env.to_headers();
        h.insert(HEADER_RECEIPT, bad);
        assert!(
            matches!(
                Envelope::from_headers(&h),
                Err(DecodeError::Malformed { .. })
            ),
            "{bad:?} accepted"
        );
    }
}

#[test]
fn every_failure_code_round_trips() {
    for f in RemoteFailure::ALL {
        assert_eq!(RemoteFailure::from_code(f.code()), Some(f));
        assert_eq!(RemoteFailure::from_byte(f.byte()), Some(f));
    }
    assert_eq!(RemoteFailure::from_byte(0), None);
    assert_eq!(RemoteFailure::from_byte(200), None);
}

#[test]
fn missing_and_malformed_fields_are_typed() {
    let ok = |t, v, c| Envelope::from_fields(t, v, c, None, None);
    assert_eq!(
        ok(None, Some("1"), Some("postcard")),
        Err(DecodeError::MissingField(HEADER_TYPE))
    );
    assert_eq!(
        ok(Some("a"), None, Some("postcard")),
        Err(DecodeError::MissingField(HEADER_VERSION))
    );
    assert_eq!(
        ok(Some("a"), Some("1"), None),
        Err(DecodeError::MissingField(HEADER_CODEC))
    );
    for (t, v, c) in [
        ("a b", "1", "postcard"),
        ("a", "+1", "postcard"),
        ("a", "-1", "postcard"),
        ("a", "4294967296", "postcard"),
        ("a", "", "postcard"),
        ("a", "1", "json"),
        ("a", "1", "postcard+zstd;dict="),
        ("a", "1", "postcard+zstd;dict=99999999999"),
    ] {
        assert!(
            matches!(
                ok(Some(t), Some(v), Some(c)),
                Err(DecodeError::Malformed { .. })
            ),
            "{t} {v} {c}"
        );
    }
    assert!(matches!(
        Envelope::from_fields(Some("a"), Some("1"), Some("postcard"), Some("x"), None),
        Err(DecodeError::Malformed {
            what: "correlation id",
            ..
        })
    ));
    assert!(matches!(
        Envelope::from_fields(None, None, None, None, Some("bogus")),
        Err(DecodeError::Malformed {
            what: "failure code",
            ..
        })
    ));
}

proptest! {
    #[test]
    fn arbitrary_fields_never_panic(
        t in proptest::option::of("\\PC{0,20}"),
        v in proptest::option::of("\\PC{0,12}"),
        c in proptest::option::of("\\PC{0,30}"),
        k in proptest::option::of("\\PC{0,22}"),
        e in proptest::option::of("\\PC{0,20}"),
    ) {
        let _ = Envelope::from_fields(t.as_deref(), v.as_deref(), c.as_deref(), k.as_deref(), e.as_deref());
    }

    #[test]
    fn valid_envelopes_round_trip(
        name in "[A-Za-z0-9_-]{1,10}(\\.[A-Za-z0-9_-]{1,10}){0,3}",
        version in 1u32..,
        codec in 0u8..3,
        dict in any::<u32>(),
        corr in proptest::option::of(any::<u64>()),
    ) {
        let codec = match codec { 0 => Codec::Postcard, 1 => Codec::PostcardZstd, _ => Codec::PostcardZstdDict(dict) };
        let env = Envelope::message(tag(&name, version), codec, corr);
        prop_assert_eq!(Envelope::from_headers(&env.to_headers()), Ok(env));
    }
}
