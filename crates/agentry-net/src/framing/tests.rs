use super::{Decoder, Framing, TooBig, encode, overhead};

fn decode_all(
    framing: Framing,
    max: usize,
    chunks: &[&[u8]],
) -> (Vec<Vec<u8>>, usize, Result<(), TooBig>) {
    let mut d = Decoder::new(framing, max);
    let mut frames = Vec::new();
    let mut wire = 0;
    for c in chunks {
        let r = d.feed(c, |f, w| {
            frames.push(f);
            wire += w;
        });
        if r.is_err() {
            return (frames, wire, r);
        }
    }
    (frames, wire, Ok(()))
}

#[test]
fn length_prefixed_frames_survive_any_split() {
    let mut stream = Vec::new();
    let payloads: Vec<Vec<u8>> = vec![b"hello".to_vec(), Vec::new(), vec![7; 300], b"x".to_vec()];
    for p in &payloads {
        stream.extend(encode(Framing::LengthPrefixed, p.clone()).expect("encodable"));
    }
    for split in 1..=stream.len() {
        let chunks: Vec<&[u8]> = stream.chunks(split).collect();
        let (frames, wire, r) = decode_all(Framing::LengthPrefixed, 1024, &chunks);
        assert_eq!(r, Ok(()));
        assert_eq!(frames, payloads, "split {split}");
        assert_eq!(wire, stream.len());
    }
}

#[test]
fn lines_survive_any_split_and_lose_their_ends() {
    let stream = b"one\r\ntwo\n\nthree\n";
    for split in 1..=stream.len() {
        let chunks: Vec<&[u8]> = stream.chunks(split).collect();
        let (frames, wire, r) = decode_all(Framing::Lines, 64, &chunks);
        assert_eq!(r, Ok(()));
        assert_eq!(
            frames,
            vec![
                b"one".to_vec(),
                b"two".to_vec(),
                Vec::new(),
                b"three".to_vec()
            ]
        );
        assert_eq!(wire, stream.len());
    }
}

#[test]
fn an_oversized_prefix_is_refused_before_its_body() {
    let mut d = Decoder::new(Framing::LengthPrefixed, 100);
    let r = d.feed(&101u32.to_be_bytes(), |_, _| panic!("no frame"));
    assert_eq!(
        r,
        Err(TooBig {
            size: 101,
            max: 100
        })
    );
    let mut d = Decoder::new(Framing::LengthPrefixed, 100);
    let r = d.feed(&u32::MAX.to_be_bytes(), |_, _| panic!("no frame"));
    assert_eq!(
        r,
        Err(TooBig {
            size: u32::MAX as usize,
            max: 100
        })
    );
}

#[test]
fn a_line_without_end_is_refused_once_over_the_maximum() {
    let (frames, _, r) = decode_all(Framing::Lines, 8, &[b"ok\n", b"12345", b"6789"]);
    assert_eq!(frames, vec![b"ok".to_vec()]);
    assert_eq!(r, Err(TooBig { size: 9, max: 8 }));
    let (_, _, r) = decode_all(Framing::Lines, 8, &[b"123456789\n"]);
    assert_eq!(r, Err(TooBig { size: 9, max: 8 }));
    let (frames, _, r) = decode_all(Framing::Lines, 8, &[b"12345678\n"]);
    assert_eq!((frames.len(), r), (1, Ok(())));
}

#[test]
fn partial_counts_an_unfinished_frame() {
    let mut d = Decoder::new(Framing::LengthPrefixed, 100);
    assert_eq!(d.partial(), 0);
    d.feed(&[0, 0], |_, _| {}).expect("fine");
    assert_eq!(d.partial(), 2);
    d.feed(&[0, 10, 1, 2, 3], |_, _| {}).expect("fine");
    assert_eq!(d.partial(), 7);
    let mut l = Decoder::new(Framing::Lines, 100);
    l.feed(b"abc", |_, _| {}).expect("fine");
    assert_eq!(l.partial(), 3);
}

#[test]
fn a_huge_announced_frame_is_not_allocated_up_front() {
    let mut d = Decoder::new(Framing::LengthPrefixed, 1 << 30);
    d.feed(&(1u32 << 29).to_be_bytes(), |_, _| {})
        .expect("within max");
    d.feed(b"abc", |_, _| {}).expect("fine");
    assert!(d.partial.capacity() < 1024);
}

#[test]
fn raw_passes_chunks_through() {
    let (frames, wire, r) = decode_all(Framing::Raw, 1, &[b"abc", b"", b"de"]);
    assert_eq!(r, Ok(()));
    assert_eq!(frames, vec![b"abc".to_vec(), b"de".to_vec()]);
    assert_eq!(wire, 5);
}

/// A deterministic pseudo-random byte soup never panics the decoder, and whatever it emits
/// respects the maximum.
#[test]
fn garbage_never_panics_and_frames_respect_the_maximum() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for framing in [Framing::LengthPrefixed, Framing::Lines] {
        for _ in 0..200 {
            let mut d = Decoder::new(framing, 64);
            for _ in 0..50 {
                let mut chunk = [0u8; 16];
                for b in chunk.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = (x % 256) as u8;
                    if x.is_multiple_of(5) {
                        *b = if framing == Framing::Lines { b'\n' } else { 0 };
                    }
                }
                let len = (x % 17) as usize;
                let r = d.feed(&chunk[..len], |f, w| {
                    assert!(f.len() <= 64);
                    assert!(w > f.len());
                });
                if r.is_err() {
                    break;
                }
                assert!(d.partial() <= 64 + 4);
            }
        }
    }
}

#[test]
fn the_overhead_is_what_encoding_adds() {
    for framing in [Framing::Raw, Framing::LengthPrefixed, Framing::Lines] {
        for len in [0, 1, 1000] {
            let encoded = encode(framing, vec![b'x'; len]).expect("encodable");
            assert_eq!(encoded.len(), len + overhead(framing), "{framing:?}");
        }
    }
}
