use super::*;
use crate::compression::Codec;
use crate::core::outbound::OutKind;
use crate::envelope::{Envelope, TypeTag};

fn config() -> ReceiptConfig {
    ReceiptConfig {
        timeout: Duration::from_secs(10),
        resend_after: Duration::from_secs(1),
        limit: 4,
    }
}

fn msg(n: u8) -> OutMsg {
    let tag = TypeTag {
        name: "t".into(),
        version: 1,
    };
    OutMsg {
        subject: async_nats::Subject::from("s"),
        reply: None,
        envelope: Envelope::message(tag, Codec::Postcard, None),
        payload: Bytes::from(vec![n]),
        request: None,
        kind: OutKind::Message,
    }
}

fn seq_of(m: &OutMsg) -> (u64, u64) {
    let r = m.envelope.receipt.as_ref().expect("stamped");
    (r.seq, r.low)
}

fn tracked(w: &mut Window, n: u8, now: Instant) -> OutMsg {
    let mut m = msg(n);
    w.track(&"gw".into(), &mut m, now);
    m
}

#[test]
fn numbers_in_order_and_the_floor_follows_confirmations() {
    let now = Instant::now();
    let mut w = Window::new(config());
    let seqs: Vec<_> = (0..3).map(|n| seq_of(&tracked(&mut w, n, now))).collect();
    assert_eq!(seqs, vec![(0, 0), (1, 0), (2, 0)]);
    assert_eq!((w.len(), w.room()), (3, 1));
    assert_eq!(w.confirm(1, 1, now), 1);
    assert_eq!(
        seq_of(&tracked(&mut w, 3, now)),
        (3, 0),
        "0 still unconfirmed"
    );
    assert!(w.takes_direct());
    let _ = tracked(&mut w, 4, now);
    assert!(!w.takes_direct(), "full");
    assert_eq!(w.confirm(0, 1, now), 1);
    assert_eq!(w.confirm(0, 2, now), 0, "confirming twice counts once");
    assert_eq!(seq_of(&tracked(&mut w, 5, now)), (5, 2));
    assert_eq!(w.confirm(2, 3, now), 3);
    assert_eq!(w.len(), 1);
    assert_eq!(w.confirm(5, 1, now), 1);
    assert_eq!(w.len(), 0);
    assert_eq!(
        w.next_due(now),
        now + Duration::from_secs(1),
        "a tick while idle"
    );
    assert_eq!(
        w.confirm(1_000, u64::MAX - 1_000, now),
        0,
        "ranges beyond are ignored"
    );
}

#[test]
fn forget_last_takes_the_message_back_unstamped() {
    let mut w = Window::new(config());
    let _ = tracked(&mut w, 0, Instant::now());
    let back = w.forget_last().expect("tracked");
    assert_eq!(
        (back.envelope.receipt, back.payload),
        (None, Bytes::from(vec![0]))
    );
    assert_eq!(w.len(), 0);
    assert_eq!(
        seq_of(&tracked(&mut w, 1, Instant::now())).0,
        0,
        "the number is reused"
    );
}

#[test]
fn unconfirmed_messages_are_resent_then_given_up() {
    let t0 = Instant::now();
    let mut w = Window::new(config());
    let _ = tracked(&mut w, 0, t0);
    let _ = tracked(&mut w, 1, t0 + Duration::from_millis(500));
    let due = w.due(t0 + Duration::from_millis(999));
    assert!(due.resend.is_empty() && due.expired.is_empty());
    let due = w.due(t0 + Duration::from_millis(1000));
    assert_eq!(
        due.resend.iter().map(seq_of).collect::<Vec<_>>(),
        vec![(0, 0)]
    );
    assert_eq!(w.next_due(t0), t0 + Duration::from_millis(1500));
    let due = w.due(t0 + Duration::from_millis(10_000));
    assert_eq!(
        due.expired.iter().map(seq_of).collect::<Vec<_>>(),
        vec![(0, 0)]
    );
    assert_eq!(
        due.resend.iter().map(seq_of).collect::<Vec<_>>(),
        vec![(1, 0)]
    );
    assert_eq!(w.len(), 1);
    assert_eq!(
        seq_of(&tracked(&mut w, 2, t0)),
        (2, 1),
        "the given-up one is settled"
    );
}

#[test]
fn each_resend_of_a_message_doubles_its_wait() {
    let t0 = Instant::now();
    let mut w = Window::new(config());
    let _ = tracked(&mut w, 0, t0);
    let resent_at =
        |w: &mut Window, ms: u64| !w.due(t0 + Duration::from_millis(ms)).resend.is_empty();
    assert!(resent_at(&mut w, 1_000));
    assert!(!resent_at(&mut w, 2_999));
    assert!(resent_at(&mut w, 3_000));
    assert!(!resent_at(&mut w, 6_999));
    assert!(resent_at(&mut w, 7_000));
    let due = w.due(t0 + Duration::from_secs(10));
    assert_eq!((due.resend.len(), due.expired.len()), (0, 1));
}

#[test]
fn copies_are_clocked_by_confirmations() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut w = Window::new(config());
    for n in 0..2 {
        let _ = tracked(&mut w, n, t0);
    }
    // Nothing confirmed: one probe per round, oldest first.
    let seqs = |due: Due| due.resend.iter().map(|m| seq_of(m).0).collect::<Vec<_>>();
    assert_eq!(seqs(w.due(at(1_000))), vec![0]);
    assert_eq!(
        w.next_due(at(1_000)),
        at(2_000),
        "the deferred one, a timeout later"
    );
    // Two later messages are confirmed: the next round may send two copies, at once.
    let _ = tracked(&mut w, 2, at(1_400));
    let _ = tracked(&mut w, 3, at(1_400));
    w.confirm(2, 2, at(1_500));
    assert_eq!(w.next_due(at(1_500)), at(1_500));
    assert_eq!(seqs(w.due(at(1_500))), vec![1], "0 waits twice as long now");
}

#[test]
fn a_slow_receiver_stretches_the_resend_timeout() {
    let t0 = Instant::now();
    let mut w = Window::new(config());
    let _ = tracked(&mut w, 0, t0);
    // Confirmed after 3 s without a resend in between (the 1 s resend is not due yet
    // because nothing asked): the delay is measured.
    assert_eq!(w.confirm(0, 1, t0 + Duration::from_secs(3)), 1);
    let t1 = t0 + Duration::from_secs(3);
    let _ = tracked(&mut w, 1, t1);
    assert!(
        w.due(t1 + Duration::from_secs(8)).resend.is_empty(),
        "3 s + 4 x 1.5 s = 9 s"
    );
    assert_eq!(w.due(t1 + Duration::from_secs(9)).resend.len(), 1);
    // A message confirmed after a resend does not measure (Karn): the timeout stays.
    assert_eq!(w.confirm(1, 1, t1 + Duration::from_secs(60)), 1);
    let t2 = t1 + Duration::from_secs(60);
    let _ = tracked(&mut w, 2, t2);
    assert_eq!(w.due(t2 + Duration::from_secs(9)).resend.len(), 1);
}

#[test]
fn a_message_is_not_given_up_while_its_subject_is_confirmed() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let mut w = Window::new(config());
    let _ = tracked(&mut w, 0, t0);
    // The receiver is slow but alive: a later message to the subject is confirmed at 9 s.
    let _ = tracked(&mut w, 1, at(8_900));
    w.confirm(1, 1, at(9_000));
    let due = w.due(at(10_000));
    assert!(due.expired.is_empty(), "the subject made progress 1 s ago");
    assert_eq!(due.resend.len(), 1, "but the message is sent again");
    assert_eq!(w.next_due(at(10_000)), at(12_000), "its second resend");
    assert!(w.due(at(18_999)).expired.is_empty());
    assert_eq!(
        w.due(at(19_000)).expired.len(),
        1,
        "no progress for the timeout"
    );
}

#[test]
fn a_reconnection_resends_everything_in_order_and_restarts_the_clock() {
    let t0 = Instant::now();
    let mut w = Window::new(config());
    for n in 0..3 {
        let _ = tracked(&mut w, n, t0);
    }
    w.confirm(1, 1, t0);
    w.disconnected();
    assert!(!w.takes_direct(), "resends go first");
    let later = t0 + Duration::from_secs(60);
    let due = w.due(later);
    assert!(due.expired.is_empty(), "disconnected time does not count");
    assert_eq!(
        due.resend.iter().map(seq_of).collect::<Vec<_>>(),
        vec![(0, 0), (2, 0)]
    );
    assert!(!w.takes_direct(), "until the copies are with the transport");
    w.resends_published();
    assert!(w.takes_direct());
    assert_eq!(
        w.next_due(later),
        later + Duration::from_secs(2),
        "resent once: the timeout doubles"
    );
}

#[test]
fn take_all_empties_the_window() {
    let mut w = Window::new(config());
    for n in 0..3 {
        let _ = tracked(&mut w, n, Instant::now());
    }
    w.confirm(0, 1, Instant::now());
    assert_eq!(w.take_all().len(), 2);
    assert_eq!((w.len(), w.room()), (0, 4));
    assert_eq!(seq_of(&tracked(&mut w, 9, Instant::now())), (3, 3));
}

#[test]
fn confirmations_round_trip_as_ranges() {
    let bytes = encode_confirmations(vec![7, 3, 4, 5, 9, 4, u64::MAX - 1]);
    assert_eq!(bytes.len(), 4 * RANGE_LEN);
    assert_eq!(
        decode_confirmations(&bytes),
        Ok(vec![(3, 3), (7, 1), (9, 1), (u64::MAX - 1, 1)])
    );
    assert!(encode_confirmations(Vec::new()).is_empty());
}

#[test]
fn malformed_confirmations_are_typed_errors() {
    let mut zero = 5u64.to_be_bytes().to_vec();
    zero.extend_from_slice(&0u32.to_be_bytes());
    let mut overflow = u64::MAX.to_be_bytes().to_vec();
    overflow.extend_from_slice(&2u32.to_be_bytes());
    for bad in [Vec::new(), vec![1; 11], vec![1; 13], zero, overflow] {
        assert!(
            matches!(
                decode_confirmations(&bad),
                Err(DecodeError::Malformed { .. })
            ),
            "{bad:?}"
        );
    }
}

fn receipt(from: &str, seq: u64, low: u64) -> Receipt {
    Receipt {
        from: from.into(),
        seq,
        low,
    }
}

#[test]
fn the_inbox_delivers_each_number_once_per_sender_and_confirms_every_copy() {
    let now = Instant::now();
    let mut inbox = Inbox::default();
    assert!(inbox.first_time(&receipt("a", 0, 0)));
    assert!(inbox.first_time(&receipt("b", 0, 0)), "another sender");
    assert!(!inbox.first_time(&receipt("a", 0, 0)), "a copy");
    assert!(inbox.first_time(&receipt("a", 5, 3)));
    assert!(
        !inbox.first_time(&receipt("a", 2, 0)),
        "below the sender's floor"
    );
    let mut confirmations = inbox.take_confirmations(now);
    confirmations.sort();
    assert_eq!(
        confirmations,
        vec![("a".into(), vec![0, 0, 5, 2]), ("b".into(), vec![0])]
    );
    assert!(inbox.take_confirmations(now).is_empty());
}

#[test]
fn the_inbox_forgets_numbers_below_the_floor_and_silent_senders() {
    let now = Instant::now();
    let mut inbox = Inbox::default();
    for seq in 0..5_000 {
        assert!(inbox.first_time(&receipt("a", seq, seq.saturating_sub(10))));
    }
    assert!(
        inbox.senders["a"].seen.len() < 2_100,
        "pruned as the floor rose"
    );
    let _ = inbox.take_confirmations(now);
    let _ = inbox.take_confirmations(now + FORGET_SENDER_AFTER);
    assert_eq!(inbox.senders.len(), 1, "heard from during the first period");
    let _ = inbox.take_confirmations(now + 2 * FORGET_SENDER_AFTER);
    assert!(inbox.senders.is_empty(), "silent for a whole period");
}
