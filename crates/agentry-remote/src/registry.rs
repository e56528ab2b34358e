//! The registry of remote message types: a stable wire name and version for each Rust type,
//! its compression, and the compression dictionaries.
//!
//! Rust's `TypeId` and `type_name` are not stable across builds, so every type that crosses
//! a process boundary is registered explicitly on both sides under the same name and
//! version. postcard is not self-describing: a published (name, version) must never change
//! its Rust shape. Change the shape ⇒ bump the version (or pick a new name); a receiver may
//! register several versions of a name as different Rust types during a migration.
//!
//! ```
//! use agentry_remote::{Compression, Registry};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Created { id: u64 }
//!
//! let registry = Registry::new();
//! registry.register::<Created>("orders.Created", 1).expect("registered");
//! assert_eq!(registry.tag_of::<Created>().expect("known").version, 1);
//! // The same Rust type cannot take a second identity:
//! assert!(registry.register::<Created>("orders.Created", 2).is_err());
//! # let _ = Compression::Off;
//! ```

use crate::compression::{self, Codec, Compression, Dictionary};
use crate::envelope::{Envelope, TypeTag};
use crate::error::{DecodeError, RegistryError, truncate};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::TypeId;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

/// What a remote message type must be: serde both ways, and shareable (a multi mbox hands
/// one `Arc<T>` to every subscriber). Implemented for every such type.
pub trait RemoteMessage: Serialize + DeserializeOwned + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> RemoteMessage for T {}

/// One registered type.
#[derive(Debug)]
pub(crate) struct TypeEntry {
    pub(crate) tag: TypeTag,
    pub(crate) rust_type: &'static str,
    pub(crate) compression: Compression,
}

#[derive(Default)]
struct Inner {
    by_type: HashMap<TypeId, Arc<TypeEntry>>,
    by_name: HashMap<Arc<str>, Vec<(u32, TypeId)>>,
    dictionaries: HashMap<u32, Arc<Dictionary>>,
}

/// The registry of remote message types and compression dictionaries. A cheap-to-clone
/// handle; types may be added while gateways run.
#[derive(Clone, Default)]
pub struct Registry(Arc<RwLock<Inner>>);

thread_local! {
    /// The buffer each thread serializes into, kept between messages: one exact-size copy
    /// per message instead of a growing vector (taken out while in use, so a `Serialize`
    /// that sends a message of its own gets a fresh one).
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Scratch buffers larger than this are not kept (one huge message must not pin its size).
const SCRATCH_KEEP: usize = 64 * 1024;

fn recycle(mut buf: Vec<u8>) -> Vec<u8> {
    if buf.capacity() > SCRATCH_KEEP {
        return Vec::new();
    }
    buf.clear();
    buf
}

/// An encoded payload with its envelope.
pub(crate) struct Encoded {
    pub(crate) envelope: Envelope,
    pub(crate) payload: Vec<u8>,
}

/// Why a message could not be encoded (the caller gives the message back).
pub(crate) enum EncodeFailure {
    NotRegistered,
    Encode(String),
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-updated (each insert is
        // one statement), so a poisoned lock is still consistent.
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `T` under `name` (a dotted name, see [`crate::subject`]) and `version`
    /// (≥ 1), uncompressed.
    pub fn register<T: RemoteMessage>(
        &self,
        name: &str,
        version: u32,
    ) -> Result<(), RegistryError> {
        self.register_with::<T>(name, version, Compression::Off)
    }

    /// Registers `T` with a compression setting for all its sends (a
    /// [`RemoteMbox`](crate::RemoteMbox) may override it). Registering the same type again
    /// with the same name and version updates its compression.
    pub fn register_with<T: RemoteMessage>(
        &self,
        name: &str,
        version: u32,
        compression: Compression,
    ) -> Result<(), RegistryError> {
        crate::subject::validate_name(name)?;
        if version == 0 {
            return Err(RegistryError::ZeroVersion(name.to_owned()));
        }
        let rust_type = std::any::type_name::<T>();
        let mut inner = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if let Compression::ZstdDict { dictionary, .. } = compression
            && !inner.dictionaries.contains_key(&dictionary)
        {
            return Err(RegistryError::UnknownDictionary(dictionary));
        }
        if let Some(e) = inner.by_type.get(&TypeId::of::<T>())
            && (&*e.tag.name != name || e.tag.version != version)
        {
            return Err(RegistryError::AlreadyRegistered {
                rust_type,
                name: e.tag.name.to_string(),
                version: e.tag.version,
            });
        }
        if let Some(versions) = inner.by_name.get(name)
            && let Some((_, other)) = versions
                .iter()
                .find(|(v, id)| *v == version && *id != TypeId::of::<T>())
        {
            let by = inner.by_type.get(other).map_or("?", |e| e.rust_type);
            return Err(RegistryError::NameTaken {
                name: name.to_owned(),
                version,
                by,
            });
        }
        let name: Arc<str> = name.into();
        let entry = Arc::new(TypeEntry {
            tag: TypeTag {
                name: Arc::clone(&name),
                version,
            },
            rust_type,
            compression,
        });
        inner.by_type.insert(TypeId::of::<T>(), entry);
        let versions = inner.by_name.entry(name).or_default();
        if !versions.iter().any(|(v, _)| *v == version) {
            versions.push((version, TypeId::of::<T>()));
        }
        Ok(())
    }

    /// Adds a zstd dictionary under `id` (both ends need the same bytes under the same id).
    /// Adding the same bytes again is fine.
    pub fn add_dictionary(&self, id: u32, bytes: &[u8]) -> Result<(), RegistryError> {
        let mut inner = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = inner.dictionaries.get(&id) {
            return if *d.bytes == *bytes {
                Ok(())
            } else {
                Err(RegistryError::DictionaryTaken(id))
            };
        }
        let d = Dictionary::new(id, bytes)?;
        inner.dictionaries.insert(id, Arc::new(d));
        Ok(())
    }

    /// The wire identity of `T`, if registered.
    pub fn tag_of<T: 'static>(&self) -> Option<TypeTag> {
        self.read()
            .by_type
            .get(&TypeId::of::<T>())
            .map(|e| e.tag.clone())
    }

    pub(crate) fn entry_of<T: 'static>(&self) -> Option<Arc<TypeEntry>> {
        self.read().by_type.get(&TypeId::of::<T>()).cloned()
    }

    /// The postcard bytes of `msg` (uncompressed) — samples for [`crate::train_dictionary`].
    pub fn encode_sample<T: Serialize>(&self, msg: &T) -> Result<Vec<u8>, String> {
        postcard::to_allocvec(msg).map_err(|e| e.to_string())
    }

    /// Encodes `msg` of registered type `T` (compression: `over` if given, else the type's).
    pub(crate) fn encode<T: RemoteMessage>(
        &self,
        msg: &T,
        over: Option<Compression>,
        corr: Option<u64>,
    ) -> Result<Encoded, EncodeFailure> {
        let (entry, dict) = {
            let inner = self.read();
            let entry = inner
                .by_type
                .get(&TypeId::of::<T>())
                .cloned()
                .ok_or(EncodeFailure::NotRegistered)?;
            let setting = over.unwrap_or(entry.compression);
            let dict = match setting {
                Compression::ZstdDict { dictionary, .. } => Some(
                    inner
                        .dictionaries
                        .get(&dictionary)
                        .cloned()
                        .ok_or_else(|| {
                            EncodeFailure::Encode(format!(
                                "dictionary {dictionary} is not registered"
                            ))
                        })?,
                ),
                _ => None,
            };
            (entry, (setting, dict))
        };
        let scratch = SCRATCH.take();
        let plain =
            postcard::to_extend(msg, scratch).map_err(|e| EncodeFailure::Encode(e.to_string()))?;
        let compressed = match dict {
            (Compression::Off, _) | (Compression::ZstdDict { .. }, None) => None,
            (Compression::Zstd { level, threshold }, _) => {
                compression::compress(&plain, level, threshold, None)
                    .map(|c| (Codec::PostcardZstd, c))
            }
            (
                Compression::ZstdDict {
                    level, threshold, ..
                },
                Some(d),
            ) => compression::compress(&plain, level, threshold, Some(&d))
                .map(|c| (Codec::PostcardZstdDict(d.id), c)),
        };
        // Not compressed (off, below the threshold, or no gain): the plain bytes, copied out
        // of the scratch buffer at their exact size.
        let (codec, payload) = compressed.unwrap_or_else(|| (Codec::Postcard, plain.clone()));
        SCRATCH.set(recycle(plain));
        Ok(Encoded {
            envelope: Envelope::message(entry.tag.clone(), codec, corr),
            payload,
        })
    }

    /// Classifies a tag that no route took: unknown name, unknown version, or known.
    pub(crate) fn check_tag(&self, tag: &TypeTag) -> Result<(), DecodeError> {
        let inner = self.read();
        match inner.by_name.get(&tag.name) {
            None => Err(DecodeError::UnknownType {
                name: truncate(&tag.name, 64),
                version: tag.version,
            }),
            Some(versions) if !versions.iter().any(|(v, _)| *v == tag.version) => {
                Err(DecodeError::WrongVersion {
                    name: tag.name.to_string(),
                    got: tag.version,
                    known: versions.iter().map(|(v, _)| *v).collect(),
                })
            }
            Some(_) => Ok(()),
        }
    }

    /// The plain (decompressed) payload bytes, at most `max` of them.
    pub(crate) fn plain_payload<'p>(
        &self,
        codec: Codec,
        payload: &'p [u8],
        max: usize,
    ) -> Result<Cow<'p, [u8]>, DecodeError> {
        if payload.len() > max {
            return Err(DecodeError::Oversized {
                size: payload.len(),
                max,
            });
        }
        match codec {
            Codec::Postcard => Ok(Cow::Borrowed(payload)),
            Codec::PostcardZstd => Ok(Cow::Owned(compression::decompress(payload, None, max)?)),
            Codec::PostcardZstdDict(id) => {
                let dict = self
                    .read()
                    .dictionaries
                    .get(&id)
                    .cloned()
                    .ok_or(DecodeError::UnknownDictionary(id))?;
                Ok(Cow::Owned(compression::decompress(
                    payload,
                    Some(&dict),
                    max,
                )?))
            }
        }
    }

    /// Decodes a payload of registered type `T`: checks the envelope's type and version
    /// against `T`'s, decompresses (at most `max` bytes), and decodes strictly (trailing
    /// bytes are an error). Never panics on any input.
    pub fn decode<T: RemoteMessage>(
        &self,
        envelope: &Envelope,
        payload: &[u8],
        max: usize,
    ) -> Result<T, DecodeError> {
        let tag = envelope
            .tag
            .as_ref()
            .ok_or(DecodeError::MissingField("type"))?;
        let entry = self
            .entry_of::<T>()
            .ok_or_else(|| DecodeError::UnknownType {
                name: truncate(&tag.name, 64),
                version: tag.version,
            })?;
        if entry.tag.name != tag.name {
            self.check_tag(tag)?;
            return Err(DecodeError::UnexpectedType {
                expected: entry.tag.name.to_string(),
                got: format!("{} v{}", truncate(&tag.name, 64), tag.version),
            });
        }
        if entry.tag.version != tag.version {
            return Err(DecodeError::WrongVersion {
                name: tag.name.to_string(),
                got: tag.version,
                known: vec![entry.tag.version],
            });
        }
        let plain = self.plain_payload(envelope.codec, payload, max)?;
        decode_plain::<T>(&plain, entry.rust_type)
    }
}

/// postcard-decodes all of `plain` as `T`.
pub(crate) fn decode_plain<T: RemoteMessage>(
    plain: &[u8],
    rust_type: &'static str,
) -> Result<T, DecodeError> {
    match postcard::take_from_bytes::<T>(plain) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(DecodeError::Payload {
            rust_type,
            detail: format!("{} trailing bytes", rest.len()),
        }),
        Err(e) => Err(DecodeError::Payload {
            rust_type,
            detail: e.to_string(),
        }),
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.read();
        f.debug_struct("Registry")
            .field("types", &inner.by_type.len())
            .field("dictionaries", &inner.dictionaries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests;
