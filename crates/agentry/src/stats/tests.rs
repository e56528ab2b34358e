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
