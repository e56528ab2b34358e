use super::*;
use crate::RejectKind;
use proptest::prelude::*;
use serde::Deserialize;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Created {
    id: u64,
    name: String,
    tags: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct CreatedV2 {
    id: u64,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Other(u8);

fn created() -> Created {
    Created {
        id: 7,
        name: "widget".repeat(30),
        tags: vec!["a".into(), "b".into()],
    }
}

#[test]
fn registration_rules() {
    let r = Registry::new();
    r.register::<Created>("orders.Created", 1).expect("ok");
    // Idempotent.
    r.register::<Created>("orders.Created", 1).expect("again");
    assert!(matches!(
        r.register::<Created>("orders.Created", 2),
        Err(RegistryError::AlreadyRegistered { .. })
    ));
    assert!(matches!(
        r.register::<Other>("orders.Created", 1),
        Err(RegistryError::NameTaken { version: 1, .. })
    ));
    // Another version of the name is another type.
    r.register::<CreatedV2>("orders.Created", 2).expect("v2");
    assert!(matches!(
        r.register::<Other>("x", 0),
        Err(RegistryError::ZeroVersion(_))
    ));
    assert!(matches!(
        r.register::<Other>("x y", 1),
        Err(RegistryError::InvalidName(_))
    ));
    assert_eq!(
        r.register_with::<Other>("o", 1, Compression::zstd_dict(9)),
        Err(RegistryError::UnknownDictionary(9))
    );
}

#[test]
fn encode_decode_round_trip_with_every_compression() {
    let r = Registry::new();
    let samples: Vec<Vec<u8>> = (0..500)
        .map(|i| {
            r.encode_sample(&Created { id: i, ..created() })
                .expect("sample")
        })
        .collect();
    let dict = crate::train_dictionary(&samples, 2048).expect("dict");
    r.add_dictionary(4, &dict).expect("dict");
    r.add_dictionary(4, &dict).expect("same bytes again");
    assert_eq!(
        r.add_dictionary(4, b"other"),
        Err(RegistryError::DictionaryTaken(4))
    );
    r.register::<Created>("orders.Created", 1).expect("ok");
    for (c, codec) in [
        (None, Codec::Postcard),
        (
            Some(Compression::zstd().with_threshold(0)),
            Codec::PostcardZstd,
        ),
        (Some(Compression::zstd_dict(4)), Codec::PostcardZstdDict(4)),
    ] {
        let Ok(e) = r.encode(&created(), c, Some(1)) else {
            panic!("encodes")
        };
        assert_eq!(e.envelope.codec, codec);
        assert_eq!(
            r.decode::<Created>(&e.envelope, &e.payload, 1 << 20),
            Ok(created())
        );
    }
}

#[test]
fn decode_rejections_are_typed() {
    let r = Registry::new();
    r.register::<Created>("orders.Created", 1).expect("ok");
    r.register::<Other>("other", 1).expect("ok");
    let Ok(e) = r.encode(&created(), None, None) else {
        panic!("encodes")
    };
    let mut env = e.envelope.clone();
    // Wrong version.
    env.tag = Some(TypeTag {
        name: "orders.Created".into(),
        version: 2,
    });
    assert_eq!(
        r.decode::<Created>(&env, &e.payload, 1 << 20)
            .map_err(|e| e.kind()),
        Err(RejectKind::WrongVersion)
    );
    assert!(matches!(
        r.check_tag(env.tag.as_ref().expect("tag")),
        Err(DecodeError::WrongVersion { got: 2, .. })
    ));
    // Unknown type.
    env.tag = Some(TypeTag {
        name: "nope".into(),
        version: 1,
    });
    assert_eq!(
        r.decode::<Created>(&env, &e.payload, 1 << 20)
            .map_err(|e| e.kind()),
        Err(RejectKind::UnknownType)
    );
    // Truncated and trailing payloads.
    assert!(matches!(
        r.decode::<Created>(&e.envelope, &e.payload[..e.payload.len() - 1], 1 << 20),
        Err(DecodeError::Payload { .. })
    ));
    let mut longer = e.payload.clone();
    longer.push(0);
    assert!(matches!(
        r.decode::<Created>(&e.envelope, &longer, 1 << 20),
        Err(DecodeError::Payload { .. })
    ));
    // Oversized.
    assert!(matches!(
        r.decode::<Created>(&e.envelope, &e.payload, 10),
        Err(DecodeError::Oversized { max: 10, .. })
    ));
    // Unknown dictionary, corrupt compression.
    let mut z = e.envelope.clone();
    z.codec = Codec::PostcardZstdDict(77);
    assert_eq!(
        r.decode::<Created>(&z, &e.payload, 1 << 20),
        Err(DecodeError::UnknownDictionary(77))
    );
    z.codec = Codec::PostcardZstd;
    assert!(matches!(
        r.decode::<Created>(&z, &e.payload, 1 << 20),
        Err(DecodeError::Decompress(_))
    ));
    // A huge length prefix does not allocate or panic.
    let huge = [0xff, 0xff, 0xff, 0xff, 0x0f];
    assert!(r.decode::<Created>(&e.envelope, &huge, 1 << 20).is_err());
}

proptest! {
    #[test]
    fn arbitrary_payloads_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), codec in 0u8..3) {
        let r = Registry::new();
        r.register::<Created>("orders.Created", 1).expect("ok");
        let codec = match codec { 0 => Codec::Postcard, 1 => Codec::PostcardZstd, _ => Codec::PostcardZstdDict(1) };
        let env = Envelope::message(TypeTag { name: "orders.Created".into(), version: 1 }, codec, None);
        let _ = r.decode::<Created>(&env, &bytes, 4096);
    }

    #[test]
    fn values_round_trip(id in any::<u64>(), name in "\\PC{0,50}", tags in proptest::collection::vec("\\PC{0,8}", 0..5)) {
        let r = Registry::new();
        r.register_with::<Created>("orders.Created", 1, Compression::zstd().with_threshold(0)).expect("ok");
        let v = Created { id, name, tags };
        let Ok(e) = r.encode(&v, None, None) else { panic!("encodes") };
        prop_assert_eq!(r.decode::<Created>(&e.envelope, &e.payload, 1 << 20), Ok(v));
    }
}
