use super::*;

#[test]
fn each_run_lands_in_the_first_bucket_whose_bound_holds_it() {
    assert_eq!(HandlerTimes::bucket_of(0), 0);
    for (i, bound) in HandlerTimes::BOUNDS.iter().enumerate() {
        let ns = u64::try_from(bound.as_nanos()).expect("small");
        assert_eq!(HandlerTimes::bucket_of(ns), i, "at {bound:?}");
        assert_eq!(
            HandlerTimes::bucket_of(ns + 1),
            i + 1,
            "just above {bound:?}"
        );
    }
    assert_eq!(HandlerTimes::bucket_of(u64::MAX), HandlerTimes::BUCKETS - 1);
}

#[test]
fn timing_records_total_and_buckets_and_sums_over_agents() {
    let timing = crate::stats::agent_counters::HandlerTiming::default();
    for ns in [500, 1_000, 1_001, 20_000, 5_000_000_000] {
        timing.record(ns);
    }
    let t = timing.read();
    assert_eq!(t.total, Duration::from_nanos(5_000_022_501));
    assert_eq!(t.count(), 5);
    assert_eq!(&t.counts[..4], &[2, 1, 0, 1]);
    assert_eq!(t.counts[HandlerTimes::BUCKETS - 1], 1);
    let mut sum = AgentStats {
        handler_time: Tracked::Value(t),
        ..AgentStats::default()
    };
    sum.accumulate(&AgentStats {
        handler_time: Tracked::Value(t),
        ..AgentStats::default()
    });
    sum.accumulate(&AgentStats::default());
    let both = sum.handler_time.value().expect("tracked");
    assert_eq!((both.count(), both.counts[0]), (10, 4));
    assert_eq!(both.total, t.total * 2);
}

#[test]
fn a_sampler_times_every_run_at_rate_one_and_one_in_every_otherwise() {
    use crate::stats::HandlerSampler;
    use std::num::NonZeroU32;

    let mut all = HandlerSampler::new(HandlerSampling::EVERY_RUN, 7);
    assert!((0..1_000).all(|_| all.take()));

    let every = 8_u32;
    let rate = HandlerSampling::one_in(NonZeroU32::new(every).expect("non-zero"));
    let intervals = |seed: u64| {
        let mut sampler = HandlerSampler::new(rate, seed);
        let mut gaps = Vec::new();
        let mut since = 0_u32;
        for _ in 0..800_000 {
            since += 1;
            if sampler.take() {
                gaps.push(since);
                since = 0;
            }
        }
        gaps
    };
    let gaps = intervals(1);
    // Each interval is in 1..=2·every−1, both ends reached; their mean is `every`.
    assert_eq!(gaps.iter().min(), Some(&1));
    assert_eq!(gaps.iter().max(), Some(&(2 * every - 1)));
    let mean = f64::from(gaps.iter().sum::<u32>()) / gaps.len() as f64;
    assert!(
        (mean - f64::from(every)).abs() < 0.1,
        "mean interval {mean}"
    );
    // Every interval length is about equally frequent (uniform, not a fixed stride).
    let mut seen = [0_u32; 16];
    for &g in &gaps {
        seen[g as usize] += 1;
    }
    let per = gaps.len() as u32 / (2 * every - 1);
    for (len, &n) in seen.iter().enumerate().take(2 * every as usize).skip(1) {
        assert!(
            n.abs_diff(per) * 10 < per,
            "interval {len}: {n} times, expected ~{per}"
        );
    }
    // Neighbouring seeds give different sequences.
    assert_ne!(intervals(2)[..32], gaps[..32]);
}

#[test]
fn a_sampler_serving_few_runs_times_one_in_every_on_average() {
    use crate::stats::HandlerSampler;
    use std::num::NonZeroU32;

    // 10^4 samplers (threads) serving 100 runs each at one in 64: the first wait must not
    // bias the count low.
    let rate = HandlerSampling::one_in(NonZeroU32::new(64).expect("non-zero"));
    let timed: u32 = (0..10_000_u64)
        .map(|seed| {
            let mut sampler = HandlerSampler::new(rate, seed);
            (0..100).filter(|_| sampler.take()).count() as u32
        })
        .sum();
    let expected = 10_000 * 100 / 64;
    assert!(
        timed.abs_diff(expected) * 20 < expected,
        "{timed} runs timed, expected about {expected}"
    );
}
