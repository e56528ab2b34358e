//! The inspector's page in a real browser: Debian's `chromium`, headless, driven through
//! `chromedriver` (WebDriver, with `fantoccini`), against a running environment. The page
//! shows the agents (count, type, state) and the coop tree; an agent flooded with messages
//! shows its handled count rise; the search box filters the table; a deregistered coop's
//! agents vanish from it.
//!
//! Needs `chromium` and `chromium-driver` (`scripts/test.sh` installs them with apt-get). If
//! either is missing the test FAILS, naming the command that installs them: a browser test
//! that silently does not run proves nothing.
//!
//! Every check polls the DOM until it holds or a generous deadline passes; none sleeps a fixed
//! time.

use agentry::{Agent, Ctx, Define, DefineError, DeregReason, Env};
use agentry_metrics::inspector::Inspector;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long any one thing may take to show in the page (a cold chromium start included).
const DEADLINE: Duration = Duration::from_secs(60);

/// Counts `Job`s; `Busy` moves it to state "busy".
struct Worker;
struct Job;
struct Busy;

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        let busy = def.state("busy")?;
        def.in_states(&[agentry::State::DEFAULT, busy])
            .on(|_: &mut Worker, _: &mut Ctx<Worker>, _: Job| {})?;
        def.on(move |_: &mut Worker, ctx: &mut Ctx<Worker>, _: Busy| {
            ctx.change_state(busy)
                .expect("invariant: busy is one of its states");
        })?;
        Ok(())
    }
}

/// Handles nothing.
struct Idle;
impl Agent for Idle {}

/// The first of `names` found on `PATH` or as an absolute path.
fn find_binary(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|name| {
        let direct = Path::new(name);
        if direct.is_absolute() {
            return direct.is_file().then(|| direct.to_path_buf());
        }
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

const INSTALL: &str = "apt-get install chromium chromium-driver (scripts/test.sh does it)";

/// A `chromedriver` on a free loopback port, killed when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let driver = find_binary(&["chromedriver", "/usr/lib/chromium/chromedriver"])
            .unwrap_or_else(|| panic!("chromedriver not found: {INSTALL}"));
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver did not start ({e}): {INSTALL}"));
        let d = Driver { child, port };
        let deadline = Instant::now() + DEADLINE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        d
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A headless chromium session through `driver`.
async fn browser(driver: &Driver) -> Client {
    let chromium = find_binary(&["chromium", "/usr/lib/chromium/chromium"])
        .unwrap_or_else(|| panic!("chromium not found: {INSTALL}"));
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--no-first-run"],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a chromium session")
}

/// The text of every element `css` selects, read in one go (no stale element between reads).
async fn texts(c: &Client, css: &str) -> Vec<String> {
    let v = c
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent)",
            vec![json!(css)],
        )
        .await
        .expect("script ran");
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| i.as_str().unwrap_or_default().to_owned())
            .collect(),
        other => panic!("not a list: {other}"),
    }
}

/// Polls the texts `css` selects until `done` holds; returns them.
async fn wait_for(
    c: &Client,
    what: &str,
    css: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let now = texts(c, css).await;
        if done(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed {what}; it shows {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn count(n: u64) -> String {
    // The page writes numbers as `toLocaleString("en-US")` does.
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_follows_agents_as_they_are_added_flooded_and_removed() {
    let env = Env::new().expect("env");
    let h = env.handle().clone();
    let mut workers = h.new_coop();
    let w: Vec<_> = (0..3).map(|_| workers.add(Worker)).collect();
    let workers = h.register_coop(workers).expect("workers");
    w[2].send(Busy);
    let server = Inspector::builder(&h)
        .tick(Duration::from_millis(100))
        .build()
        .expect("inspector")
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr: SocketAddr = server.local_addr();

    let driver = Driver::start();
    let c = browser(&driver).await;
    c.goto(&format!("http://{addr}/"))
        .await
        .expect("page opened");

    // The three workers, one of them busy.
    wait_for(&c, "three Worker rows", "#agents tbody td.type", |t| {
        t.len() == 3 && t.iter().all(|t| t.ends_with("::Worker"))
    })
    .await;
    wait_for(&c, "a busy worker", "#agents tbody td.state", |s| {
        s.iter().filter(|s| *s == "busy").count() == 1
    })
    .await;

    // Agents added later appear: a child coop of two idle agents.
    let mut idle = h.new_coop();
    idle.set_parent(workers);
    for _ in 0..2 {
        idle.add(Idle);
    }
    let idle = h.register_coop(idle).expect("idle");
    wait_for(&c, "five agents", "#agents tbody tr", |rows| {
        rows.len() == 5
    })
    .await;
    wait_for(
        &c,
        "the child coop under its parent",
        "#coops li li",
        |coops| coops.len() == 1 && coops[0].contains("2 agents"),
    )
    .await;

    // A flooded worker's handled count rises in its row.
    let id = w[0].agent_id().expect("registered").to_string();
    for _ in 0..5000 {
        w[0].send(Job);
    }
    let handled = format!("#agents tbody tr[data-id=\"{id}\"] td.handled");
    wait_for(&c, "5,000 handled", &handled, |h| h == [count(5000)]).await;

    // The search box filters the table (on the server).
    let search = c.find(Locator::Id("search")).await.expect("search box");
    search.send_keys("Idle").await.expect("typed");
    wait_for(&c, "only the idle agents", "#agents tbody td.type", |t| {
        t.len() == 2 && t.iter().all(|t| t.ends_with("::Idle"))
    })
    .await;
    wait_for(&c, "the match count", "#matched", |m| {
        m == ["2 of 5 agents match"]
    })
    .await;

    // Deregistering their coop makes them vanish.
    h.deregister_coop(idle, DeregReason::Normal)
        .expect("registered");
    wait_for(&c, "no idle agent", "#agents tbody tr", |rows| {
        rows.is_empty()
    })
    .await;
    wait_for(&c, "the match count", "#matched", |m| {
        m == ["0 of 3 agents match"]
    })
    .await;

    // A new search shows the workers again, the flooded one still counting 5,000.
    search.clear().await.expect("cleared");
    search.send_keys("Worker").await.expect("typed");
    wait_for(&c, "the workers again", "#agents tbody td.type", |t| {
        t.len() == 3
    })
    .await;
    wait_for(&c, "5,000 handled", &handled, |h| h == [count(5000)]).await;
    wait_for(&c, "a dispatcher row", "#dispatchers tbody tr", |d| {
        !d.is_empty()
    })
    .await;

    c.close().await.expect("browser closed");
    drop(driver);
    server.stop();
    h.stop();
    tokio::task::spawn_blocking(move || env.run())
        .await
        .expect("env stopped");
}
