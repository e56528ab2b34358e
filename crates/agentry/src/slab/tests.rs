use super::{admits, locate, pack};

#[test]
fn a_lineage_admits_its_own_earlier_incarnations_only() {
    // An occupant that began at generation 7 and was restarted twice (now 11).
    let state = pack(11, 7);
    for g in [7, 9, 11] {
        assert!(admits(state, g), "incarnation {g} of the occupant");
    }
    for g in [1, 5, 13, 8] {
        assert!(!admits(state, g), "generation {g} is not the occupant's");
    }
    // A free slot (even) admits nothing; a fresh occupant only itself.
    assert!(!admits(pack(12, 7), 11));
    assert!(admits(pack(13, 13), 13) && !admits(pack(13, 13), 11));
    // Across the wrap of the 32-bit generation.
    let wrapped = pack(3, u32::MAX);
    assert!(admits(wrapped, u32::MAX) && admits(wrapped, 1) && admits(wrapped, 3));
    assert!(!admits(wrapped, u32::MAX - 2));
}

#[test]
fn segments_tile_the_index_space() {
    assert_eq!(locate(0), (0, 0));
    assert_eq!(locate(255), (0, 255));
    assert_eq!(locate(256), (1, 0));
    assert_eq!(locate(767), (1, 511));
    assert_eq!(locate(768), (2, 0));
    assert_eq!(locate(u32::MAX).0, 24);
}
