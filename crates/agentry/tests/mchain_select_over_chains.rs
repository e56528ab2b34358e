//! `Select` takes the first message any of its chains has, going round the chains fairly,
//! wakes when another thread sends, times out, and reports when every chain is closed.

use agentry::SelectError;
use agentry::mchain::{Close, Handlers, Mchain, Select};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(10);

fn tagged(tag: &'static str) -> Handlers<'static, (&'static str, u32)> {
    let mut h = Handlers::new();
    h.on(move |n: u32| (tag, n)).expect("one closure");
    h
}

#[test]
fn busy_chains_are_served_round_robin() {
    let a = Mchain::unbounded();
    let b = Mchain::unbounded();
    for n in 0..3u32 {
        a.send(n);
        b.send(n + 10);
    }
    let mut select = Select::new();
    select.case(&a, tagged("a")).case(&b, tagged("b"));
    let got: Vec<_> = (0..6)
        .map(|_| select.wait(Duration::ZERO).expect("queued"))
        .collect();
    assert_eq!(
        got,
        [
            ("a", 0),
            ("b", 10),
            ("a", 1),
            ("b", 11),
            ("a", 2),
            ("b", 12)
        ]
    );
    assert_eq!(select.wait(Duration::ZERO), Err(SelectError::Timeout));
}

#[test]
fn a_send_from_another_thread_wakes_the_select() {
    let a = Mchain::unbounded();
    let b = Mchain::unbounded();
    let mut select = Select::new();
    select.case(&a, tagged("a")).case(&b, tagged("b"));
    let sender = {
        let b = b.clone();
        std::thread::spawn(move || b.send(42u32))
    };
    assert_eq!(select.wait(DEADLINE), Ok(("b", 42)));
    sender.join().expect("sender");
}

#[test]
fn closed_chains_are_skipped_until_all_are_closed() {
    let a = Mchain::unbounded();
    let b = Mchain::unbounded();
    b.send(7u32);
    a.close(Close::RetainContent);
    b.close(Close::RetainContent);
    let mut select = Select::new();
    select.case(&a, tagged("a")).case(&b, tagged("b"));
    assert_eq!(
        select.wait(DEADLINE),
        Ok(("b", 7)),
        "retained content first"
    );
    assert_eq!(select.wait(DEADLINE), Err(SelectError::AllClosed));
}

#[test]
fn a_select_without_chains_is_a_typed_error() {
    let mut select: Select<'_, ()> = Select::new();
    assert_eq!(select.wait(Duration::ZERO), Err(SelectError::NoChains));
}
