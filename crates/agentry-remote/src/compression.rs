//! zstd compression of payloads: off by default; per message type (in the
//! [`Registry`](crate::Registry)) or per global mbox ([`RemoteMbox::with_compression`](crate::RemoteMbox::with_compression)).
//!
//! A payload is compressed only if it is at least `threshold` bytes long, and sent
//! compressed only if that made it smaller (random data grows). Small messages (≲ 1 KiB)
//! compress well only with a *trained dictionary* shared by both ends
//! ([`train_dictionary`], [`Registry::add_dictionary`](crate::Registry::add_dictionary)); the
//! dictionary id travels in the envelope, and a receiver without that dictionary rejects the
//! message with [`DecodeError::UnknownDictionary`].
//!
//! Compression contexts are cached per thread (creating one costs more than compressing a
//! small message).

use crate::error::{DecodeError, RegistryError};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How payloads are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// No compression (the default).
    #[default]
    Off,
    /// zstd at `level` for payloads of at least `threshold` bytes.
    Zstd {
        /// zstd level (1 is fast; 3 is zstd's default).
        level: i32,
        /// Payloads shorter than this are sent uncompressed.
        threshold: usize,
    },
    /// zstd with the registered dictionary `dictionary`.
    ZstdDict {
        /// The dictionary's id (see [`Registry::add_dictionary`](crate::Registry::add_dictionary)).
        dictionary: u32,
        /// zstd level.
        level: i32,
        /// Payloads shorter than this are sent uncompressed.
        threshold: usize,
    },
}

impl Compression {
    /// zstd level 1 for payloads of at least 1 KiB.
    pub const fn zstd() -> Compression {
        Compression::Zstd {
            level: 1,
            threshold: 1024,
        }
    }

    /// zstd level 1 with dictionary `id`, for payloads of at least 64 bytes.
    pub const fn zstd_dict(id: u32) -> Compression {
        Compression::ZstdDict {
            dictionary: id,
            level: 1,
            threshold: 64,
        }
    }

    /// The same setting with another threshold.
    pub const fn with_threshold(self, threshold: usize) -> Compression {
        match self {
            Compression::Off => Compression::Off,
            Compression::Zstd { level, .. } => Compression::Zstd { level, threshold },
            Compression::ZstdDict {
                dictionary, level, ..
            } => Compression::ZstdDict {
                dictionary,
                level,
                threshold,
            },
        }
    }
}

/// Trains a zstd dictionary of at most `max_size` bytes from sample payloads (e.g. a few
/// thousand encoded messages; see [`Registry::encode_sample`](crate::Registry::encode_sample)).
pub fn train_dictionary<S: AsRef<[u8]>>(
    samples: &[S],
    max_size: usize,
) -> Result<Vec<u8>, RegistryError> {
    zstd::dict::from_samples(samples, max_size)
        .map_err(|e| RegistryError::Compression(e.to_string()))
}

/// A registered dictionary. `uid` is unique in the process (two registries may use the same
/// wire id for different bytes), and keys the per-thread context caches.
#[derive(Debug)]
pub(crate) struct Dictionary {
    pub(crate) id: u32,
    uid: u64,
    pub(crate) bytes: Arc<[u8]>,
}

impl Dictionary {
    pub(crate) fn new(id: u32, bytes: &[u8]) -> Result<Dictionary, RegistryError> {
        static UID: AtomicU64 = AtomicU64::new(1);
        // Validate now: a dictionary zstd refuses would otherwise fail every send.
        zstd::bulk::Compressor::with_dictionary(1, bytes)
            .map_err(|e| RegistryError::Compression(e.to_string()))?;
        zstd::bulk::Decompressor::with_dictionary(bytes)
            .map_err(|e| RegistryError::Compression(e.to_string()))?;
        Ok(Dictionary {
            id,
            uid: UID.fetch_add(1, Ordering::Relaxed),
            bytes: bytes.into(),
        })
    }
}

/// Codec of a payload, as carried in the envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// postcard, uncompressed.
    Postcard,
    /// postcard, then zstd.
    PostcardZstd,
    /// postcard, then zstd with the dictionary of this id.
    PostcardZstdDict(u32),
}

const CACHE: usize = 8;

thread_local! {
    static COMPRESSORS: RefCell<Vec<((u64, i32), zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(Vec::new()) };
    static DECOMPRESSORS: RefCell<Vec<(u64, zstd::bulk::Decompressor<'static>)>> =
        const { RefCell::new(Vec::new()) };
}

/// Compresses `plain` per `setting`, or returns `None` if it should go uncompressed (below
/// the threshold, not smaller, or zstd failed — then it is logged and sent plain).
pub(crate) fn compress(
    plain: &[u8],
    level: i32,
    threshold: usize,
    dict: Option<&Dictionary>,
) -> Option<Vec<u8>> {
    if plain.len() < threshold {
        return None;
    }
    let uid = dict.map_or(0, |d| d.uid);
    let out = COMPRESSORS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let pos = match cache.iter().position(|(k, _)| *k == (uid, level)) {
            Some(p) => p,
            None => {
                let bytes: &[u8] = dict.map_or(&[], |d| &d.bytes);
                let c = zstd::bulk::Compressor::with_dictionary(level, bytes).ok()?;
                if cache.len() == CACHE {
                    cache.remove(0);
                }
                cache.push(((uid, level), c));
                cache.len() - 1
            }
        };
        cache[pos].1.compress(plain).ok()
    });
    match out {
        Some(c) if c.len() < plain.len() => Some(c),
        Some(_) => None,
        None => {
            tracing::warn!(
                len = plain.len(),
                "zstd compression failed; sending uncompressed"
            );
            None
        }
    }
}

/// Decompresses at most `max` bytes.
pub(crate) fn decompress(
    data: &[u8],
    dict: Option<&Dictionary>,
    max: usize,
) -> Result<Vec<u8>, DecodeError> {
    let uid = dict.map_or(0, |d| d.uid);
    DECOMPRESSORS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let pos = match cache.iter().position(|(k, _)| *k == uid) {
            Some(p) => p,
            None => {
                let bytes: &[u8] = dict.map_or(&[], |d| &d.bytes);
                let d = zstd::bulk::Decompressor::with_dictionary(bytes)
                    .map_err(|e| DecodeError::Decompress(e.to_string()))?;
                if cache.len() == CACHE {
                    cache.remove(0);
                }
                cache.push((uid, d));
                cache.len() - 1
            }
        };
        if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(data)
            && size > max as u64
        {
            return Err(DecodeError::Oversized {
                size: usize::try_from(size).unwrap_or(usize::MAX),
                max,
            });
        }
        cache[pos]
            .1
            .decompress(data, max)
            .map_err(|e| DecodeError::Decompress(crate::error::truncate(&e.to_string(), 120)))
    })
}

#[cfg(test)]
mod tests;
