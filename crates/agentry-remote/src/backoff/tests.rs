use super::*;

#[test]
fn doubles_from_min_up_to_max() {
    let range = (Duration::from_millis(50), Duration::from_secs(2));
    let waits: Vec<u128> = (0..8).map(|a| backoff(a, range).as_millis()).collect();
    assert_eq!(waits, vec![50, 100, 200, 400, 800, 1600, 2000, 2000]);
    assert_eq!(backoff(usize::MAX, range), Duration::from_secs(2));
}
