use super::*;
use proptest::prelude::*;

fn record(i: u32) -> Vec<u8> {
    format!(
        "{{\"from\":\"node-03/agent-sensor-{i:04}\",\"to\":\"node-01/collector\",\"seq\":{i},\"tags\":[\"temp\",\"hall\",\"east\"],\"note\":\"nominal nominal nominal\"}}"
    )
    .into_bytes()
}

#[test]
fn below_threshold_or_not_smaller_stays_plain() {
    assert_eq!(compress(b"short", 1, 1024, None), None);
    // Incompressible bytes do not shrink.
    let noise: Vec<u8> = (0u32..256)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert_eq!(compress(&noise, 1, 0, None), None);
}

#[test]
fn zstd_round_trips() {
    let plain = record(1).repeat(8);
    let c = compress(&plain, 1, 0, None).expect("compressible");
    assert!(c.len() < plain.len());
    assert_eq!(decompress(&c, None, 1 << 20), Ok(plain.clone()));
    assert!(matches!(
        decompress(&c, None, 16),
        Err(DecodeError::Oversized { max: 16, .. })
    ));
}

#[test]
fn a_trained_dictionary_shrinks_small_records() {
    let samples: Vec<Vec<u8>> = (0..2000).map(record).collect();
    let dict = train_dictionary(&samples, 4096).expect("trained");
    let d = Dictionary::new(1, &dict).expect("valid");
    let plain = record(5555);
    let c = compress(&plain, 1, 0, Some(&d)).expect("compressible");
    assert!(c.len() * 3 < plain.len(), "{} vs {}", c.len(), plain.len());
    assert_eq!(decompress(&c, Some(&d), 1 << 16), Ok(plain));
    // Without the dictionary the frame does not decode.
    assert!(decompress(&c, None, 1 << 16).is_err());
}

#[test]
fn thresholds_apply_to_each_setting() {
    assert_eq!(
        Compression::zstd().with_threshold(5),
        Compression::Zstd {
            level: 1,
            threshold: 5
        }
    );
    assert_eq!(Compression::Off.with_threshold(5), Compression::Off);
    assert_eq!(
        Compression::zstd_dict(3).with_threshold(0),
        Compression::ZstdDict {
            dictionary: 3,
            level: 1,
            threshold: 0
        }
    );
}

proptest! {
    #[test]
    fn garbage_never_panics_the_decompressor(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decompress(&bytes, None, 4096);
    }

    #[test]
    fn compress_round_trips(plain in proptest::collection::vec(0u8..4, 0..2000)) {
        if let Some(c) = compress(&plain, 1, 0, None) {
            prop_assert_eq!(decompress(&c, None, 4096), Ok(plain));
        }
    }
}
