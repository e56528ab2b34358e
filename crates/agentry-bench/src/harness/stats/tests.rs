use std::time::Duration;

use super::{Stats, median_f64};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn median_of_odd_count_is_the_middle_value() {
    let stats = Stats::of(&[ms(5), ms(1), ms(9), ms(3), ms(7)]).expect("non-empty");
    assert_eq!(stats.median, ms(5));
    assert_eq!(stats.min, ms(1));
    assert_eq!(stats.max, ms(9));
    assert_eq!(stats.count, 5);
}

#[test]
fn median_of_even_count_is_the_mean_of_the_middle_values() {
    let stats = Stats::of(&[ms(10), ms(2), ms(4), ms(8), ms(6), ms(1)]).expect("non-empty");
    assert_eq!(stats.median, ms(5));
    assert_eq!(stats.min, ms(1));
    assert_eq!(stats.max, ms(10));
}

#[test]
fn single_value_is_median_min_and_max() {
    let stats = Stats::of(&[ms(3)]).expect("non-empty");
    assert_eq!((stats.median, stats.min, stats.max), (ms(3), ms(3), ms(3)));
}

#[test]
fn empty_input_has_no_stats() {
    assert_eq!(Stats::of(&[]), None);
    assert_eq!(median_f64(&[]), None);
}

#[test]
fn derived_figures_use_the_median() {
    let stats = Stats::of(&[ms(1), ms(2), ms(100)]).expect("non-empty");
    // 1,000 units in the median 2 ms: 500,000 units/s, 2,000 ns/unit.
    assert_eq!(stats.per_sec(1_000), Some(500_000.0));
    assert_eq!(stats.ns_per_unit(1_000), Some(2_000.0));
    assert_eq!(stats.per_sec(0), None);
    assert_eq!(stats.ns_per_unit(0), None);
}

#[test]
fn zero_median_has_no_rate() {
    let stats = Stats::of(&[Duration::ZERO]).expect("non-empty");
    assert_eq!(stats.per_sec(10), None);
    assert_eq!(stats.ns_per_unit(10), Some(0.0));
}

#[test]
fn median_f64_handles_odd_and_even_counts() {
    assert_eq!(median_f64(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median_f64(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
}
