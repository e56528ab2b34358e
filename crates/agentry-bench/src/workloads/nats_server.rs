//! A private nats-server on a loopback port: started on a port it chooses, stopped on drop,
//! and (for the soak, `soak/remote.rs`) killed by pid and restarted on the same port. The
//! `remote_rr` session starts one when nats-server is installed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start or restart may take.
const START_LIMIT: Duration = Duration::from_secs(20);

/// A nats-server child process and its ports-file directory (removed on drop).
#[derive(Debug)]
pub struct NatsServer {
    binary: PathBuf,
    dir: PathBuf,
    child: Option<Child>,
    port: u16,
    url: String,
    /// Extra arguments (JetStream).
    extra: Vec<String>,
}

impl NatsServer {
    /// The nats-server binary (in `PATH`, `/usr/sbin` or `/usr/bin`), if installed.
    pub fn binary() -> Option<PathBuf> {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("nats-server"))
            .chain(["/usr/sbin/nats-server", "/usr/bin/nats-server"].map(PathBuf::from))
            .find(|p| p.is_file())
    }

    /// Starts nats-server on 127.0.0.1, on a port it chooses.
    ///
    /// # Errors
    /// It does not start or does not report its port in time.
    pub fn start(binary: PathBuf) -> Result<Self, String> {
        Self::start_with(binary, false)
    }

    /// Starts nats-server with JetStream (storing in its temporary directory).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_jetstream(binary: PathBuf) -> Result<Self, String> {
        Self::start_with(binary, true)
    }

    fn start_with(binary: PathBuf, jetstream: bool) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!(
            "agentry-nats-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{dir:?}: {e}"))?;
        let mut server = NatsServer {
            binary,
            dir,
            child: None,
            port: 0,
            url: String::new(),
            extra: Vec::new(),
        };
        if jetstream {
            let store = server.dir.join("js");
            server.extra = vec![
                "-js".into(),
                "-sd".into(),
                store.to_string_lossy().into_owned(),
            ];
        }
        let child = server.spawn("-1")?;
        let ports = server.dir.join(format!("nats-server_{}.ports", child.id()));
        server.child = Some(child);
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            if let Ok(text) = std::fs::read_to_string(&ports)
                && let Some(at) = text.find("nats://")
            {
                let rest = &text[at..];
                let url = &rest[..rest.find('"').unwrap_or(rest.len())];
                server.port = url
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| format!("no port in {url}"))?;
                server.url = url.to_owned();
                let _ = std::fs::remove_file(&ports);
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(format!(
            "nats-server did not report its port within {START_LIMIT:?}"
        ))
    }

    fn spawn(&self, port: &str) -> Result<Child, String> {
        Command::new(&self.binary)
            .args(["-a", "127.0.0.1", "-p", port, "--ports_file_dir"])
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("nats-server: {e}"))
    }

    /// The client URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Kills the server (by its pid) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // Killing a server that already exited fails harmlessly; wait reaps it.
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// True while the server runs.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts it again on the same port (retrying while the port is still held).
    ///
    /// # Errors
    /// It did not come back within the limit.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let port = self.port.to_string();
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            let mut child = self.spawn(&port)?;
            std::thread::sleep(Duration::from_millis(50));
            let alive = matches!(child.try_wait(), Ok(None));
            if alive && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        Err(format!("nats-server did not restart on port {}", self.port))
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
