//! A multi mbox delivers each message to every agent subscribed to its type, all sharing one
//! allocation (`Arc<T>`), which is freed once the last subscriber drops it. A message with no
//! subscriber is counted in `EnvStats::no_subscribers`.

mod common;

use agentry::disp::OneThreadDispatcher;
use agentry::{Agent, Ctx, Define, DefineError, Env, MultiMbox};
use common::{recv, wait_stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};

/// Counts how many times a `News` value is dropped.
struct News {
    id: u32,
    drops: Arc<AtomicU64>,
}
impl Drop for News {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

struct Unrelated;

/// Hands each `Arc<News>` it receives to the test.
struct Reader {
    topic: MultiMbox,
    out: Sender<(usize, Arc<News>)>,
    me: usize,
}

impl Agent for Reader {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let topic = self.topic.clone();
        def.from(&topic)
            .on(|r: &mut Reader, _: &mut Ctx<Reader>, n: Arc<News>| {
                let _ = r.out.send((r.me, n));
            })?;
        Ok(())
    }
}

#[test]
fn every_subscriber_gets_the_same_allocation() {
    const READERS: usize = 4;
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let other = OneThreadDispatcher::new(&h, "other").expect("dispatcher");
    let (tx, rx) = mpsc::channel();
    let mut coop = h.new_coop();
    for me in 0..READERS {
        let reader = Reader {
            topic: topic.clone(),
            out: tx.clone(),
            me,
        };
        if me % 2 == 0 {
            coop.add(reader);
        } else {
            coop.add_with(reader, &other.binder());
        }
    }
    h.register_coop(coop).expect("register");
    assert_eq!(topic.subscriber_count::<News>(), READERS);
    assert_eq!(topic.subscriber_count::<Unrelated>(), 0);

    let drops = Arc::new(AtomicU64::new(0));
    for id in 0..3 {
        topic.send(News {
            id,
            drops: drops.clone(),
        });
    }
    let mut got: Vec<(usize, Arc<News>)> = (0..3 * READERS).map(|_| recv(&rx)).collect();
    for id in 0..3 {
        let copies: Vec<&(usize, Arc<News>)> = got.iter().filter(|(_, n)| n.id == id).collect();
        assert_eq!(copies.len(), READERS, "news {id}");
        let mut readers: Vec<usize> = copies.iter().map(|(r, _)| *r).collect();
        readers.sort();
        assert_eq!(readers, (0..READERS).collect::<Vec<_>>());
        for (_, n) in &copies {
            assert!(Arc::ptr_eq(n, &copies[0].1), "a subscriber got a copy");
        }
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    got.clear();
    assert_eq!(
        drops.load(Ordering::SeqCst),
        3,
        "one value per send, dropped once"
    );
    assert_eq!(h.stats().no_subscribers, 0);

    topic.send(Unrelated);
    topic.send(Unrelated);
    assert_eq!(h.stats().no_subscribers, 2);
    h.stop();
    common::run_env(env);
}

#[test]
fn a_message_without_subscribers_is_counted() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let topic = h.create_mbox();
    let drops = Arc::new(AtomicU64::new(0));
    topic.send(News {
        id: 1,
        drops: drops.clone(),
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped at once");
    let stats = wait_stats(&h, "counted", |s| s.no_subscribers == 1);
    assert_eq!(stats.dead_letters, 0);
}
