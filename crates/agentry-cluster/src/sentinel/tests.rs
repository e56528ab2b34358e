use super::*;

fn exposed(locals: &Locals, n: u64) -> Vec<u64> {
    let mut t = locals.lock();
    (0..n)
        .map(|_| {
            t.next_key += 1;
            let key = t.next_key;
            t.agents.insert(
                key,
                Local {
                    incarnation: 7,
                    coop: None,
                    gone: None,
                    names: vec![format!("name-{key}")],
                },
            );
            key
        })
        .collect()
}

#[test]
fn departures_are_remembered_up_to_the_bound_then_forgotten_oldest_first() {
    let locals = Locals::default();
    let keys = exposed(&locals, KEEP_DEPARTED as u64 + 3);
    let alive = exposed(&locals, 1)[0];
    for &key in &keys {
        let (incarnation, names) = locals
            .depart(key, ExitReason::Normal)
            .expect("in the table");
        assert_eq!((incarnation, names), (7, vec![format!("name-{key}")]));
    }
    // The three oldest departures are forgotten; the rest answer with their reason.
    for &key in &keys[..3] {
        assert!(matches!(locals.answer(7, key), WatchAnswer::Unknown));
    }
    assert!(matches!(locals.answer(7, keys[3]), WatchAnswer::Gone(_)));
    assert!(matches!(
        locals.answer(7, *keys.last().expect("keys")),
        WatchAnswer::Gone(_)
    ));
    // A live agent is never forgotten, and the table holds the bound plus the living.
    assert!(matches!(locals.answer(7, alive), WatchAnswer::Alive));
    assert_eq!(locals.lock().agents.len(), KEEP_DEPARTED + 1);
    // A second departure of the same key is not recorded twice.
    assert!(locals.depart(keys[0], ExitReason::Normal).is_none());
    assert!(locals.depart(keys[5], ExitReason::Normal).is_none());
    assert_eq!(locals.lock().departed.len(), KEEP_DEPARTED);
}
