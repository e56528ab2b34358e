//! A private nats-server on a free loopback port, stopped on drop.

use super::BenchError;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long nats-server may take to write its ports file.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A running nats-server and its ports-file directory (removed on drop).
#[derive(Debug)]
pub(crate) struct NatsServer {
    child: Child,
    dir: PathBuf,
    url: String,
}

fn binary() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nats-server"))
        .chain(["/usr/sbin/nats-server", "/usr/bin/nats-server"].map(PathBuf::from))
        .find(|p| p.is_file())
}

impl NatsServer {
    /// Starts nats-server on 127.0.0.1, port chosen by the server.
    ///
    /// # Errors
    /// [`BenchError::NatsUnavailable`] when it is not installed; [`BenchError::Setup`] when it
    /// does not start or report its port.
    pub(crate) fn start() -> Result<NatsServer, BenchError> {
        let bin = binary().ok_or(BenchError::NatsUnavailable)?;
        let dir = std::env::temp_dir().join(format!(
            "agentry-remote-rr-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::Setup(format!("{dir:?}: {e}")))?;
        let child = Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", "-1", "--ports_file_dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| BenchError::Setup(format!("nats-server: {e}")))?;
        let ports = dir.join(format!("nats-server_{}.ports", child.id()));
        let mut server = NatsServer {
            child,
            dir,
            url: String::new(),
        };
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            if let Ok(text) = std::fs::read_to_string(&ports)
                && let Some(at) = text.find("nats://")
            {
                let rest = &text[at..];
                server.url = rest[..rest.find('"').unwrap_or(rest.len())].to_owned();
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(BenchError::Setup(format!(
            "nats-server did not report its port within {START_LIMIT:?}"
        )))
    }

    /// The client URL (`nats://127.0.0.1:PORT`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        // Killing a server that already exited fails harmlessly; wait reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
