//! Where a slab's slots (and their occupant entries) are stored: segments of slots, found by
//! slot index through a two-level table.
//!
//! Segments double from [`FIRST_SEGMENT`] slots up to [`LARGE_SEGMENT`], then all have
//! `LARGE_SEGMENT` slots. The doubling keeps a small environment small (its first agent makes
//! a segment of 256 slots); the bound keeps a large one from making (and writing) room for
//! as many agents again as it already has: with doubling all the way, the millionth agent
//! made a segment of a million slots, 88 MB of slots and entries of which a 10^6-agent
//! `skynet` used a tenth.
//!
//! # Ground rules
//!
//! - Segment `s` lives in directory block `s / DIRECTORY_BLOCK`, at `s % DIRECTORY_BLOCK`.
//!   Directory blocks and segments are made on demand, by one thread at a time (the caller
//!   of [`Segments::publish`] holds the slab's allocation lock), and published with
//!   `Release`; readers load them with `Acquire`.
//! - A published segment never moves, shrinks or goes away while the table lives: a
//!   reference to one of its values stays valid as long as the table does.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Slots in the first segment; segment `k` holds `FIRST_SEGMENT << k` slots up to
/// [`LARGE_SEGMENT`].
pub(super) const FIRST_SEGMENT: usize = 256;
/// Slots in every segment from [`DOUBLING`] on.
const LARGE_SEGMENT: usize = 1 << 16;
/// Segments that double (the last of them has `LARGE_SEGMENT` slots).
const DOUBLING: usize = (LARGE_SEGMENT / FIRST_SEGMENT).trailing_zeros() as usize + 1;
/// Slots in the doubling segments together.
const DOUBLED: usize = FIRST_SEGMENT * ((1 << DOUBLING) - 1);
/// Segment pointers per directory block.
const DIRECTORY_BLOCK: usize = 256;
/// Directory blocks: enough segments for every `u32` index.
const DIRECTORY_BLOCKS: usize =
    (DOUBLING + ((1usize << 32) - DOUBLED).div_ceil(LARGE_SEGMENT)).div_ceil(DIRECTORY_BLOCK);

/// The segment of slot `index` and its offset in that segment.
pub(super) fn locate(index: u32) -> (usize, usize) {
    let index = index as usize;
    if index < DOUBLED {
        let i = index / FIRST_SEGMENT + 1;
        let segment = (usize::BITS - 1 - i.leading_zeros()) as usize;
        (segment, index - FIRST_SEGMENT * ((1 << segment) - 1))
    } else {
        let beyond = index - DOUBLED;
        (DOUBLING + beyond / LARGE_SEGMENT, beyond % LARGE_SEGMENT)
    }
}

/// Slots in segment `segment`.
pub(super) fn segment_len(segment: usize) -> usize {
    FIRST_SEGMENT << segment.min(DOUBLING - 1)
}

type DirectoryBlock<T> = [AtomicPtr<T>; DIRECTORY_BLOCK];

/// The segments of one kind of value (a slab's slots, or their occupant entries).
pub(crate) struct Segments<T> {
    directory: [AtomicPtr<DirectoryBlock<T>>; DIRECTORY_BLOCKS],
}

// SAFETY: the table owns its segments and hands out only shared references to their values
// (ground rules), so it is `Send`/`Sync` when they may be sent and shared.
unsafe impl<T: Send + Sync> Send for Segments<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Segments<T> {}

impl<T> Segments<T> {
    pub(super) fn new() -> Self {
        Segments {
            directory: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// The value of slot `index`, if its segment is published.
    #[inline]
    pub(super) fn get(&self, index: u32) -> Option<&T> {
        let (segment, offset) = locate(index);
        let block = self.directory[segment / DIRECTORY_BLOCK].load(Ordering::Acquire);
        if block.is_null() {
            return None;
        }
        // SAFETY: a published directory block lives as long as the table (ground rules).
        let base = unsafe { &*block }[segment % DIRECTORY_BLOCK].load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: a published segment has `segment_len(segment)` values and lives as long as
        // the table; `offset` is within it by construction of `locate`.
        Some(unsafe { &*base.add(offset) })
    }

    /// Publishes segment `segment`, made of `segment_len(segment)` values (checked).
    ///
    /// The caller holds the lock that makes it the only thread to publish (ground rules); a
    /// segment is published once.
    pub(super) fn publish(&self, segment: usize, values: Box<[T]>) {
        assert_eq!(
            values.len(),
            segment_len(segment),
            "invariant: a segment has its length"
        );
        let entry = &self.directory[segment / DIRECTORY_BLOCK];
        let mut block = entry.load(Ordering::Acquire);
        if block.is_null() {
            let fresh: Box<DirectoryBlock<T>> =
                Box::new(std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())));
            block = Box::into_raw(fresh);
            entry.store(block, Ordering::Release);
        }
        // SAFETY: published just above or before, and never freed while the table lives.
        let slot = &unsafe { &*block }[segment % DIRECTORY_BLOCK];
        assert!(
            slot.load(Ordering::Relaxed).is_null(),
            "invariant: a segment is published once"
        );
        slot.store(Box::into_raw(values).cast::<T>(), Ordering::Release);
    }
}

impl<T> Drop for Segments<T> {
    fn drop(&mut self) {
        for (b, block) in self.directory.iter_mut().enumerate() {
            let block = *block.get_mut();
            if block.is_null() {
                continue;
            }
            // SAFETY: `block` came from `Box::into_raw` in `publish`, and `&mut self` means
            // nobody holds a reference into the table any more.
            let mut block = unsafe { Box::from_raw(block) };
            for (s, base) in block.iter_mut().enumerate() {
                let base = *base.get_mut();
                if !base.is_null() {
                    let segment = b * DIRECTORY_BLOCK + s;
                    let values = ptr::slice_from_raw_parts_mut(base, segment_len(segment));
                    // SAFETY: `base` came from `Box::into_raw` of a boxed slice of this length
                    // (checked in `publish`); freed once, here.
                    drop(unsafe { Box::from_raw(values) });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DOUBLED, DOUBLING, LARGE_SEGMENT, Segments, locate, segment_len};
    use std::sync::Arc;

    #[test]
    fn segments_tile_the_index_space() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(255), (0, 255));
        assert_eq!(locate(256), (1, 0));
        assert_eq!(locate(767), (1, 511));
        assert_eq!(locate(768), (2, 0));
        // The last doubling segment, then segments of equal size.
        assert_eq!(DOUBLING, 9);
        assert_eq!(segment_len(DOUBLING - 1), LARGE_SEGMENT);
        assert_eq!(
            locate(DOUBLED as u32 - 1),
            (DOUBLING - 1, LARGE_SEGMENT - 1)
        );
        assert_eq!(locate(DOUBLED as u32), (DOUBLING, 0));
        assert_eq!(segment_len(DOUBLING + 5), LARGE_SEGMENT);
        assert_eq!(
            locate((DOUBLED + 3 * LARGE_SEGMENT + 7) as u32),
            (DOUBLING + 3, 7)
        );
        // Every index has a segment and an offset within it.
        let (last, offset) = locate(u32::MAX);
        assert!(offset < segment_len(last));
        for index in [
            0,
            1_000,
            DOUBLED as u32 - 1,
            DOUBLED as u32,
            1 << 20,
            u32::MAX,
        ] {
            let (segment, offset) = locate(index);
            assert!(offset < segment_len(segment), "index {index}");
        }
    }

    #[test]
    fn published_segments_are_found_by_index_and_dropped_with_the_table() {
        let marker = Arc::new(());
        let table: Segments<Arc<()>> = Segments::new();
        assert!(table.get(0).is_none());
        let first: Box<[Arc<()>]> = (0..segment_len(0)).map(|_| Arc::clone(&marker)).collect();
        table.publish(0, first);
        assert!(table.get(0).is_some() && table.get(255).is_some());
        assert!(table.get(256).is_none(), "segment 1 is not published");
        assert_eq!(Arc::strong_count(&marker), 1 + 256);
        drop(table);
        assert_eq!(Arc::strong_count(&marker), 1);
        // A segment in the second directory block (the first holds segments 0..256).
        let bytes: Segments<u8> = Segments::new();
        let far = 300;
        let index = (DOUBLED + (far - DOUBLING) * LARGE_SEGMENT + 5) as u32;
        assert_eq!(locate(index), (far, 5));
        assert!(bytes.get(index).is_none());
        let mut values = vec![0u8; segment_len(far)];
        values[5] = 7;
        bytes.publish(far, values.into_boxed_slice());
        assert_eq!(bytes.get(index), Some(&7));
        assert_eq!(bytes.get(index - 1), Some(&0));
    }
}
