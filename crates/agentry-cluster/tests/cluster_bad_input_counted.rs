//! Input on the cluster's subjects that does not decode is counted and dropped; the node
//! keeps working.

mod support;

use agentry_cluster::Cluster;
use support::*;

#[test]
fn malformed_cluster_messages_are_counted_and_change_nothing() {
    let Some(bin) = nats_or_skip("cluster_bad_input_counted") else {
        return;
    };
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let join = |id: &str| {
        Cluster::builder("t", id)
            .registry(false)
            .timeout(WAIT)
            .join(h, &server.url)
            .expect("joins")
    };
    let n = join("n");
    let (_log, seen_log) = Log::start(h, &n, false);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let garbage: &[u8] = &[
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    let subjects = [
        "hb", "leave", "evict.n", "gone", "watch.n", "spawn.n", "stop.n",
    ];
    rt.block_on(async {
        let raw = async_nats::connect(&server.url).await.expect("raw client");
        for s in subjects {
            let subject = format!("agentry.cluster.t.{s}");
            // With a reply subject, so the request subjects see a well-formed request.
            raw.publish_with_reply(subject, "nobody.listens", garbage.to_vec().into())
                .await
                .expect("published");
        }
        raw.flush().await.expect("flushed");
    });
    assert!(eventually(|| n.stats().malformed == subjects.len() as u64));
    assert_eq!(n.stats().rejoins, 0, "an undecodable eviction is not one");

    // The node still works: another node comes up, and leaves.
    let m = join("m");
    assert!(eventually(|| seen(&seen_log)
        .iter()
        .any(|s| matches!(s, Seen::Up(id, _) if id == "m"))));
    m.leave();
    assert!(eventually(|| seen(&seen_log).iter().any(
        |s| matches!(s, Seen::Down(id, _, r) if id == "m" && r == "Left")
    )));
    assert_eq!(n.stats().malformed, subjects.len() as u64);
    n.leave();
    h.stop();
    env.run();
}
