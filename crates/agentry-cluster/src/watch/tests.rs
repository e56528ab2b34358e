use super::*;

struct Idle;
impl agentry::Agent for Idle {}

fn target(node: &str, incarnation: u64, key: u64) -> AgentRef {
    AgentRef {
        node: NodeKey {
            id: node.into(),
            incarnation,
        },
        key,
        address: String::new(),
    }
}

#[test]
fn watches_are_found_by_target_and_by_node_and_leave_no_index_behind() {
    let env = agentry::Env::new().expect("env");
    let watcher = env.handle().register_agent(Idle).expect("registered");
    let mut t = Table::default();
    let entry = |target: AgentRef| Entry {
        watcher: watcher.clone(),
        target,
    };
    assert!(
        t.insert(1, entry(target("a", 1, 7))),
        "the watcher's first watch"
    );
    assert!(!t.insert(2, entry(target("a", 1, 7))));
    t.insert(3, entry(target("a", 1, 8)));
    t.insert(4, entry(target("a", 2, 7))); // another incarnation of the node
    t.insert(5, entry(target("b", 1, 7)));
    let a1 = NodeKey {
        id: "a".into(),
        incarnation: 1,
    };
    assert_eq!(t.of_target(&a1, 7), vec![1, 2]);
    let mut of_node = t.of_node(&a1);
    of_node.sort_unstable();
    assert_eq!(of_node, vec![1, 2, 3]);
    assert!(t.remove(1).is_some());
    assert!(t.remove(1).is_none(), "removed once");
    assert_eq!(t.of_target(&a1, 7), vec![2]);
    for id in [2, 3, 4, 5] {
        assert!(t.remove(id).is_some());
    }
    assert!(t.entries.is_empty() && t.by_target.is_empty() && t.by_watcher.is_empty());
    // A finished watcher's watches go, and only its.
    let other = env.handle().register_agent(Idle).expect("registered");
    t.insert(6, entry(target("a", 1, 7)));
    t.insert(
        7,
        Entry {
            watcher: other.clone(),
            target: target("a", 1, 7),
        },
    );
    t.remove_watcher(watcher.id());
    assert_eq!(t.of_target(&a1, 7), vec![7]);
    assert!(t.entries.contains_key(&7) && !t.entries.contains_key(&6));
    env.handle().stop();
    env.run();
}
