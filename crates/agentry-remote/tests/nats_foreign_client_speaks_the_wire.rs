//! A client in another language speaks the wire format from its documentation alone: a
//! Python program (`tests/foreign/client.py`, nats-py) writes envelopes byte by byte, gets
//! a request answered, a typed failure for an unregistered type, its messages delivered (and
//! one of another wire version rejected and counted), and receives the gateway's messages,
//! confirming their receipts so that none is resent or reported unconfirmed.
//!
//! Needs `python3` with `nats-py` (`scripts/test.sh` installs it into `target/py`; the
//! interpreter is taken from `AGENTRY_PYTHON`, else `python3`).

mod common;

use agentry_remote::Gateway;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn python() -> String {
    let python = std::env::var("AGENTRY_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python).args(["-c", "import nats"]).output();
    match probe {
        Ok(out) if out.status.success() => python,
        _ => panic!(
            "`{python}` with nats-py is needed: run scripts/test.sh (it installs them), or \
             `python3 -m pip install nats-py`, or point AGENTRY_PYTHON at an interpreter that has it"
        ),
    }
}

#[test]
fn a_python_client_speaks_the_documented_bytes() {
    let Some(bin) = nats_or_skip("a_python_client_speaks_the_documented_bytes") else {
        return;
    };
    let python = python();
    let server = NatsServer::start(&bin);
    let env = env();
    let h = env.handle();
    let gw = Gateway::builder(&registry())
        .namespace("foreign")
        .connect_nats(h, &server.url)
        .expect("gateway");
    gw.serve::<Add, Sum>("calc", &register(h, Adder))
        .expect("serve");
    let (c, seen) = Collector::<Ping>::new(None);
    gw.subscribe::<Ping>("in", &register(h, c))
        .expect("subscribe");

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/foreign/client.py");
    let mut child = Command::new(python)
        .args([script, server.url.as_str(), "foreign"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python started");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || lines.next().expect("a line").expect("readable");
    assert_eq!(next(), "REPLY 42");
    // 9: rejected, unknown type (the documented failure byte).
    assert_eq!(next(), "FAILURE 9");
    assert_eq!(next(), "SENT");
    assert!(eventually(|| len(&seen) == 1));
    let py = gw.mbox("py").expect("name");
    for i in 0..3 {
        py.send(Ping(100 + i)).expect("sent");
    }
    for i in 0..3 {
        assert_eq!(next(), format!("NOTE {i} {}", 100 + i));
    }
    assert!(child.wait().expect("python ended").success());

    assert_eq!(*seen.lock().expect("lock"), vec![Ping(7)]);
    assert!(eventually(|| gw.stats().confirmed == 3));
    let s = gw.stats();
    assert_eq!(
        (
            s.requests_served,
            s.rejected_unknown_type,
            s.rejected_malformed,
            s.unconfirmed,
        ),
        (1, 1, 1, 0),
        "{s:?}"
    );
    h.stop();
    env.run();
}
