use super::*;
use proptest::prelude::*;

#[test]
fn valid_names() {
    for n in ["a", "orders", "orders.created", "A-b_c.9", "x.y.z"] {
        assert_eq!(validate_name(n), Ok(()), "{n}");
    }
    assert_eq!(validate_token("app-1"), Ok(()));
}

#[test]
fn invalid_names_are_typed() {
    assert_eq!(validate_name(""), Err(NameError::Empty));
    for n in [".a", "a.", "a..b", "."] {
        assert!(
            matches!(validate_name(n), Err(NameError::EmptyToken { .. })),
            "{n}"
        );
    }
    for (n, ch) in [
        ("a b", ' '),
        ("a*", '*'),
        ("a>", '>'),
        ("é", 'é'),
        ("a\r\n", '\r'),
    ] {
        match validate_name(n) {
            Err(NameError::InvalidChar { ch: c, .. }) => assert_eq!(c, ch, "{n}"),
            other => panic!("{n}: {other:?}"),
        }
    }
    assert!(matches!(
        validate_token("a.b"),
        Err(NameError::InvalidChar { ch: '.', at: 1, .. })
    ));
    let long = "a".repeat(MAX_NAME_LEN + 1);
    assert!(matches!(
        validate_name(&long),
        Err(NameError::TooLong { len, .. }) if len == MAX_NAME_LEN + 1
    ));
}

#[test]
fn subjects_follow_the_scheme() {
    let s = Scheme::new("app", "gw1").expect("valid");
    assert_eq!(
        s.message_subject("orders.x").expect("valid"),
        "app.v1.m.orders.x"
    );
    assert_eq!(s.service_subject("calc").expect("valid"), "app.v1.s.calc");
    assert_eq!(s.reply_subject(42), "app.v1.r.gw1.42");
    assert_eq!(s.reply_wildcard(), "app.v1.r.gw1.*");
    assert_eq!(s.parse_reply("app.v1.r.gw1.42"), Some(42));
    assert_eq!(s.parse_reply("app.v1.r.gw2.42"), None);
    assert_eq!(s.parse_reply("app.v1.r.gw1.x"), None);
    assert!(Scheme::new("a.b", "gw").is_err());
}

#[test]
fn reply_subjects_are_exact_and_parse_back() {
    let s = Scheme::new("app", "gw1").expect("valid");
    for corr in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
        let subject = s.reply_subject(corr);
        assert_eq!(subject, format!("app.v1.r.gw1.{corr}"));
        // Exact capacity: the Subject made from it needs no second allocation.
        assert_eq!(subject.capacity(), subject.len());
        assert_eq!(s.parse_reply(&subject), Some(corr));
    }
}

#[test]
fn gateway_ids_are_distinct_tokens() {
    let a = new_gateway_id();
    let b = new_gateway_id();
    assert_ne!(a, b);
    assert_eq!(a.len(), 13);
    assert_eq!(validate_token(&a), Ok(()));
}

proptest! {
    #[test]
    fn names_from_the_alphabet_are_valid(tokens in prop::collection::vec("[A-Za-z0-9_-]{1,8}", 1..6)) {
        let name = tokens.join(".");
        prop_assert_eq!(validate_name(&name), Ok(()));
    }

    #[test]
    fn validation_never_panics_and_accepts_only_the_alphabet(name in "\\PC{0,40}") {
        if validate_name(&name).is_ok() {
            prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'));
            prop_assert!(!name.starts_with('.') && !name.ends_with('.') && !name.contains(".."));
        }
    }
}

#[test]
fn durable_subjects_and_stream_names() {
    let s = Scheme::new("shop", "gw").expect("scheme");
    assert_eq!(
        s.durable_subject("orders.created").as_deref(),
        Ok("shop.v1.d.orders.created")
    );
    assert_eq!(
        s.durable_stream("orders.created").as_deref(),
        Ok("shop_Sorders_dcreated")
    );
    // Names that a naive `.` → `_` mapping would merge stay apart.
    let a = s.durable_stream("a_.b").expect("valid");
    let b = s.durable_stream("a._b").expect("valid");
    assert_ne!(a, b);
    let long = ["a_"; 42].join(".");
    assert!(matches!(
        s.durable_stream(&long),
        Err(NameError::TooLong { .. })
    ));
}

proptest! {
    /// Distinct (namespace, name) pairs never share a stream.
    #[test]
    fn stream_names_are_injective(
        ns1 in "[a-z_]{1,4}", n1 in "[a-z_]{1,3}(\\.[a-z_]{1,3}){0,2}",
        ns2 in "[a-z_]{1,4}", n2 in "[a-z_]{1,3}(\\.[a-z_]{1,3}){0,2}",
    ) {
        let s1 = Scheme::new(&ns1, "g").expect("scheme").durable_stream(&n1).expect("valid");
        let s2 = Scheme::new(&ns2, "g").expect("scheme").durable_stream(&n2).expect("valid");
        prop_assert_eq!(s1 == s2, ns1 == ns2 && n1 == n2);
        prop_assert!(!s1.contains('.'));
    }

    /// The one-pass check and the character-by-character one agree on every non-empty string
    /// (`validate` refuses the empty one first).
    #[test]
    fn the_fast_check_agrees_with_the_faults(name in "[a-zA-Z0-9_.\\-é* >]{1,12}", dots in any::<bool>()) {
        prop_assert_eq!(well_formed(name.as_bytes(), dots), first_fault(&name, dots).is_ok());
    }
}
