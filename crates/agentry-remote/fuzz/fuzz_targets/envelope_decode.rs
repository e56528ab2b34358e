//! The envelope decoders never panic: link frames, NATS message payloads, and payloads under
//! every codec (postcard, zstd, zstd with a dictionary) into a registered type.
//!
//! `cargo +nightly fuzz run envelope_decode` (from `crates/agentry-remote`).
#![no_main]

use agentry_remote::frame::{self, Frame};
use agentry_remote::{Codec, envelope::Envelope, Registry, envelope::TypeTag};
use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

#[derive(Serialize, Deserialize, Debug)]
struct Sample {
    id: u64,
    name: String,
    tags: Vec<String>,
    value: Option<f64>,
    nested: Vec<(u8, Vec<u8>)>,
}

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| {
        let r = Registry::new();
        r.register::<Sample>("fuzz.Sample", 1).expect("register");
        let samples: Vec<Vec<u8>> = (0..200u64)
            .map(|i| {
                r.encode_sample(&Sample {
                    id: i,
                    name: format!("sample-{i}"),
                    tags: vec!["a".into(), format!("t{}", i % 7)],
                    value: Some(i as f64),
                    nested: vec![(1, vec![2, 3])],
                })
                .expect("sample")
            })
            .collect();
        if let Ok(d) = agentry_remote::train_dictionary(&samples, 1024) {
            let _ = r.add_dictionary(1, &d);
        }
        r
    })
}

const MAX: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let r = registry();
    // 1. A link frame (and, if it is a message, its payload).
    if let Some((body, _)) = frame::split(data) {
        if let Ok(Frame::Message { envelope, payload, .. }) = Frame::decode(body) {
            let _ = r.decode::<Sample>(&envelope, payload, MAX);
        }
    }
    if let Ok(Frame::Message { envelope, payload, .. }) = Frame::decode(data) {
        let _ = r.decode::<Sample>(&envelope, payload, MAX);
    }
    // 2. A NATS message payload (wire version, envelope, body).
    if let Ok((envelope, body)) = Envelope::from_nats_payload(&bytes::Bytes::copy_from_slice(data)) {
        let _ = r.decode::<Sample>(&envelope, &body, MAX);
    }
    // 3. The bytes as a payload under each codec.
    for codec in [Codec::Postcard, Codec::PostcardZstd, Codec::PostcardZstdDict(1), Codec::PostcardZstdDict(2)] {
        let env = Envelope::message(
            TypeTag {
                name: "fuzz.Sample".into(),
                version: 1,
            },
            codec,
            None,
        );
        let _ = r.decode::<Sample>(&env, data, MAX);
    }
});
