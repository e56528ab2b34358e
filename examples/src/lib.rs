//! Shared helpers for the Agentry examples.
//!
//! The examples live in `examples/examples/*.rs`; each is a program (`cargo run -p
//! agentry-examples --example <name>`) whose `run` function is also called by its own test.
//! These helpers keep those tests bounded and quiet; none of them is needed to use Agentry.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::{self, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::Duration;

/// How long an example's test may take before it is failed rather than left hanging. The
/// examples finish in milliseconds; this only turns a bug into a failure.
pub const TEST_DEADLINE: Duration = Duration::from_secs(5);

/// Runs `f` on a helper thread and returns its result, panicking if it has not finished
/// within `limit` (or if it panicked).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(agentry_examples::within(Duration::from_secs(1), || 6 * 7), 42);
/// ```
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("not finished within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the worker sends before it returns"),
        },
    }
}

/// A cloneable in-memory [`Write`] sink: an example writes into one clone, its test reads
/// the text back from another.
///
/// ```
/// use std::io::Write;
/// let buf = agentry_examples::SharedBuf::default();
/// writeln!(buf.clone(), "hello").expect("in-memory write");
/// assert_eq!(buf.contents(), "hello\n");
/// ```
#[derive(Clone, Debug, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Everything written so far, as text (invalid UTF-8 is replaced).
    pub fn contents(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Keeps panics whose message starts with `marker` off stderr (examples that panic on
/// purpose use it so that their output shows only what they mean to show). Other panics are
/// reported as usual. Installed once per process; later calls do nothing.
pub fn quiet_panics(marker: &'static str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if !message.is_some_and(|m| m.starts_with(marker)) {
                default(info);
            }
        }));
    });
}
