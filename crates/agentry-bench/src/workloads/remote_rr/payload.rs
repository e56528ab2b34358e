//! The records the client sends, their three message types (one per [`Codec`]) and the
//! registry both processes build identically.

use super::Codec;
use crate::harness::BenchError;
use agentry_remote::{Compression, Registry, RemoteMessage, train_dictionary};
use serde::{Deserialize, Serialize};

/// Bytes per record (the seed: 256).
pub const RECORD_SIZE: usize = 256;
/// The dictionary's id in the registry.
const DICT: u32 = 1;
/// Distinct records cycled through by a cell.
pub(crate) const DISTINCT: usize = 1000;

/// Record `i`: a 256-byte actor-like JSON line, compressible the way real messages are.
pub(crate) fn record(i: u64) -> Vec<u8> {
    let mut s = format!(
        "{{\"from\":\"node-03/agent-sensor-{:04}\",\"to\":\"node-01/collector\",\"seq\":{i},\"tags\":[\"temp\",\"hall-{}\",\"east\"],\"note\":\"",
        i % 9973,
        i % 17
    );
    while s.len() < RECORD_SIZE - 2 {
        s.push_str(["nominal ", "steady ", "ok "][(i as usize + s.len()) % 3]);
    }
    s.truncate(RECORD_SIZE - 2);
    s.push_str("\"}");
    s.into_bytes()
}

/// A record as a message type; one type per codec, since compression is set per type.
pub(crate) trait Payload: RemoteMessage + Clone + PartialEq {
    fn wrap(bytes: Vec<u8>) -> Self;
    fn bytes(&self) -> &[u8];
}

macro_rules! payload_type {
    ($name:ident) => {
        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
        pub(crate) struct $name(#[serde(with = "serde_bytes_vec")] Vec<u8>);

        impl Payload for $name {
            fn wrap(bytes: Vec<u8>) -> Self {
                $name(bytes)
            }
            fn bytes(&self) -> &[u8] {
                &self.0
            }
        }
    };
}
payload_type!(Plain);
payload_type!(Zstd);
payload_type!(Dict);

/// `Vec<u8>` as serde bytes (postcard: a length and the raw bytes, not a sequence).
mod serde_bytes_vec {
    use serde::de::Visitor;
    use serde::{Deserializer, Serializer};
    pub(crate) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(ByteBuf)
    }

    /// Reads the bytes in one piece (`Vec<u8>`'s own impl reads a sequence, byte by byte).
    struct ByteBuf;

    impl<'de> Visitor<'de> for ByteBuf {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bytes")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
    }
}

/// The served name of each codec's echo.
pub(crate) fn service(codec: Codec) -> &'static str {
    match codec {
        Codec::Plain => "rr.plain",
        Codec::Zstd => "rr.zstd",
        Codec::Dict => "rr.dict",
    }
}

/// The registry of both processes: the three types, the last two compressed, the third
/// with a dictionary trained on 3,000 records.
pub(crate) fn registry() -> Result<Registry, BenchError> {
    let r = Registry::new();
    let samples = (1_000_000..1_003_000)
        .map(|i| r.encode_sample(&Dict(record(i))))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BenchError::Harness(format!("dictionary samples: {e}")))?;
    let dict = train_dictionary(&samples, 4096)
        .map_err(|e| BenchError::Harness(format!("dictionary training: {e}")))?;
    let registered = r
        .add_dictionary(DICT, &dict)
        .and_then(|()| r.register::<Plain>("rr.Plain", 1))
        .and_then(|()| r.register_with::<Zstd>("rr.Zstd", 1, Compression::zstd().with_threshold(0)))
        .and_then(|()| {
            r.register_with::<Dict>("rr.Dict", 1, Compression::zstd_dict(DICT).with_threshold(0))
        });
    registered.map_err(|e| BenchError::Harness(format!("registry: {e}")))?;
    Ok(r)
}

/// One record's size on the wire: postcard, and postcard compressed with zstd level 1.
///
/// # Errors
/// [`BenchError::Harness`] if the record cannot be encoded.
pub fn wire_sizes() -> Result<(usize, usize), BenchError> {
    let plain = postcard::to_allocvec(&Plain(record(7)))
        .map_err(|e| BenchError::Harness(format!("encode: {e}")))?;
    let zstd = zstd::bulk::compress(&plain, 1)
        .map_err(|e| BenchError::Harness(format!("compress: {e}")))?;
    Ok((plain.len(), zstd.len()))
}
