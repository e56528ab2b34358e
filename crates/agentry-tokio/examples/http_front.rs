//! An HTTP service with agents behind it: axum in front, each request answered by the `Shop`
//! agent (async request/reply), the agent calling a second local HTTP service (the pricing
//! backend) through an async client, from futures it starts in its handlers.
//!
//! ```text
//! client ──HTTP──▶ axum front ──ask(Quote)──▶ Shop agent ──Tasks::spawn──▶ reqwest ──HTTP──▶ backend
//!        ◀─JSON──             ◀──reply────              ◀──Priced (a message)──
//! ```
//!
//! The agent keeps its cache and its pending replies in its own state; futures never touch
//! it: a backend answer comes back as a `Priced` message. Two timeouts: the agent's client
//! gives up on a slow backend (`504` for that quote), and the front gives up on the agent
//! (`503`; the late reply is discarded and counted by agentry). Loopback only.
//!
//! `cargo run -p agentry-tokio --example http_front` starts both services, asks a few
//! quotes and prints them; `cargo test -p agentry-tokio --example http_front` runs the tests
//! at the bottom with a real HTTP client.

use agentry::{
    Agent, Ctx, Define, DefineError, Env, EnvStats, Mbox, ReplyTo, Request, RequestError,
};
use agentry_tokio::{MboxExt, Tasks};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;

/// A price as both services send it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Quoted {
    item: String,
    price: u64,
}

/// Why the shop has no price.
#[derive(Debug, Clone, Copy, PartialEq)]
enum NoPrice {
    Unknown,
    BackendTimeout,
    BackendFailed,
}

/// The query the front asks the shop.
struct Quote(String);
type Answer = Result<Quoted, NoPrice>;

/// A backend answer, back from a future as a message.
struct Priced {
    item: String,
    result: Answer,
}

/// Prices items through the backend and caches them; requests for an item being fetched
/// wait for the same fetch.
struct Shop {
    tasks: Tasks,
    client: reqwest::Client,
    backend: String,
    cache: HashMap<String, Quoted>,
    waiting: HashMap<String, Vec<ReplyTo<Answer>>>,
}

impl Agent for Shop {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(
            |shop: &mut Shop, ctx: &mut Ctx<Shop>, r: Request<Quote, Answer>| {
                let (Quote(item), reply) = r.into_parts();
                if let Some(hit) = shop.cache.get(&item) {
                    let _ = reply.reply(Ok(hit.clone()));
                    return;
                }
                let waiting = shop.waiting.entry(item.clone()).or_default();
                waiting.push(reply);
                if waiting.len() == 1 {
                    let fetch = fetch(
                        shop.client.clone(),
                        format!("{}/price/{item}", shop.backend),
                    );
                    shop.tasks.spawn(ctx, async move {
                        Priced {
                            result: fetch.await,
                            item,
                        }
                    });
                }
            },
        )?;
        def.on(
            |shop: &mut Shop, _: &mut Ctx<Shop>, Priced { item, result }: Priced| {
                if let Ok(quoted) = &result {
                    shop.cache.insert(item.clone(), quoted.clone());
                }
                for reply in shop.waiting.remove(&item).unwrap_or_default() {
                    let _ = reply.reply(result.clone()); // Err: the front stopped waiting (counted)
                }
            },
        )?;
        Ok(())
    }
}

/// One backend call (runs on tokio, outside the agent).
async fn fetch(client: reqwest::Client, url: String) -> Answer {
    let response = client.get(url).send().await.map_err(|e| {
        if e.is_timeout() {
            NoPrice::BackendTimeout
        } else {
            NoPrice::BackendFailed
        }
    })?;
    if response.status() == StatusCode::NOT_FOUND {
        return Err(NoPrice::Unknown);
    }
    response.json::<Quoted>().await.map_err(|e| {
        if e.is_timeout() {
            NoPrice::BackendTimeout
        } else {
            NoPrice::BackendFailed
        }
    })
}

/// The pricing backend: known items answer at once, `slow` after `slow_for`; it counts calls.
async fn backend(slow_for: Duration) -> std::io::Result<(SocketAddr, Arc<AtomicU64>)> {
    let calls = Arc::new(AtomicU64::new(0));
    let app = Router::new()
        .route(
            "/price/{item}",
            get(
                async move |State((calls, slow_for)): State<(Arc<AtomicU64>, Duration)>,
                            Path(item): Path<String>| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    let price = match item.as_str() {
                        "bolt" => 42,
                        "nut" => 7,
                        "slow" => {
                            tokio::time::sleep(slow_for).await;
                            99
                        }
                        _ => return Err(StatusCode::NOT_FOUND),
                    };
                    Ok(Json(Quoted { item, price }))
                },
            ),
        )
        .with_state((Arc::clone(&calls), slow_for));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, calls))
}

/// The front's timeouts.
#[derive(Clone, Copy)]
struct Timeouts {
    /// How long the shop's client waits for the backend.
    backend: Duration,
    /// How long the front waits for the shop.
    front: Duration,
}

/// The HTTP front: `GET /quote/{item}` asks the shop.
async fn front(shop: Mbox, wait: Duration) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route(
            "/quote/{item}",
            get(
                async move |State((shop, wait)): State<(Mbox, Duration)>,
                            Path(item): Path<String>| {
                    match shop.ask::<Quote, Answer>(Quote(item), wait).await {
                        Ok(Ok(quoted)) => Ok(Json(quoted)),
                        Ok(Err(NoPrice::Unknown)) => Err(StatusCode::NOT_FOUND),
                        Ok(Err(NoPrice::BackendTimeout)) => Err(StatusCode::GATEWAY_TIMEOUT),
                        Ok(Err(NoPrice::BackendFailed)) => Err(StatusCode::BAD_GATEWAY),
                        Err(RequestError::Timeout | RequestError::Overloaded) => {
                            Err(StatusCode::SERVICE_UNAVAILABLE)
                        }
                        Err(_) => Err(StatusCode::INTERNAL_SERVER_ERROR),
                    }
                },
            ),
        )
        .with_state((shop, wait));
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// Both services and the agent, on one tokio runtime and one agentry environment.
struct Service {
    runtime: tokio::runtime::Runtime,
    env: Env,
    url: String,
    backend_calls: Arc<AtomicU64>,
    tasks: agentry_tokio::TaskProbe,
}

impl Service {
    fn start(
        timeouts: Timeouts,
        slow_for: Duration,
    ) -> Result<Service, Box<dyn std::error::Error>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let env = Env::new()?;
        let (backend_addr, backend_calls) = runtime.block_on(backend(slow_for))?;
        let tasks = Tasks::new(runtime.handle().clone());
        let probe = tasks.probe();
        let shop = env.handle().register_agent(Shop {
            tasks,
            client: reqwest::Client::builder()
                .timeout(timeouts.backend)
                .build()?,
            backend: format!("http://{backend_addr}"),
            cache: HashMap::new(),
            waiting: HashMap::new(),
        })?;
        let front_addr = runtime.block_on(front(shop, timeouts.front))?;
        Ok(Service {
            runtime,
            env,
            url: format!("http://{front_addr}"),
            backend_calls,
            tasks: probe,
        })
    }

    fn stop(self) -> EnvStats {
        self.env.handle().stop();
        let stats = self.env.run();
        self.runtime.shutdown_background();
        stats
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let timeouts = Timeouts {
        backend: Duration::from_millis(300),
        front: Duration::from_secs(2),
    };
    let service = Service::start(timeouts, Duration::from_secs(1))?;
    println!("front at {}", service.url);
    let client = reqwest::Client::new();
    for item in ["bolt", "nut", "bolt", "washer", "slow"] {
        let response = service
            .runtime
            .block_on(client.get(format!("{}/quote/{item}", service.url)).send())?;
        let status = response.status();
        let body = service.runtime.block_on(response.text())?;
        println!("GET /quote/{item} -> {status} {body}");
    }
    println!(
        "backend calls: {}, futures: {:?}",
        service.backend_calls.load(Ordering::Relaxed),
        service.tasks.stats()
    );
    service.stop();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(service: &Service, client: &reqwest::Client, item: &str) -> (StatusCode, String) {
        service.runtime.block_on(async {
            let response = client
                .get(format!("{}/quote/{item}", service.url))
                .send()
                .await
                .expect("the front answers");
            let status = response.status();
            (status, response.text().await.expect("a body"))
        })
    }

    #[test]
    fn quotes_are_answered_by_the_agent_and_cached_in_its_state() {
        let timeouts = Timeouts {
            backend: Duration::from_secs(5),
            front: Duration::from_secs(5),
        };
        let service = Service::start(timeouts, Duration::ZERO).expect("started");
        let client = reqwest::Client::new();
        let (status, body) = get(&service, &client, "bolt");
        assert_eq!(status, StatusCode::OK);
        let quoted: Quoted = serde_json::from_str(&body).expect("JSON");
        assert_eq!(
            quoted,
            Quoted {
                item: "bolt".into(),
                price: 42
            }
        );
        assert_eq!(get(&service, &client, "washer").0, StatusCode::NOT_FOUND);

        // 50 concurrent clients for two items: every one answered, the backend asked once
        // per item (bolt is cached, nut is fetched once for all its waiters).
        let answers = service.runtime.block_on(async {
            let mut calls = tokio::task::JoinSet::new();
            for n in 0..50 {
                let url = format!(
                    "{}/quote/{}",
                    service.url,
                    if n % 2 == 0 { "bolt" } else { "nut" }
                );
                let client = client.clone();
                calls.spawn(async move { client.get(url).send().await.map(|r| r.status()) });
            }
            calls.join_all().await
        });
        assert_eq!(answers.len(), 50);
        assert!(
            answers.iter().all(|a| matches!(a, Ok(StatusCode::OK))),
            "{answers:?}"
        );
        assert_eq!(
            service.backend_calls.load(Ordering::Relaxed),
            3,
            "bolt, washer, nut"
        );
        let futures = service
            .tasks
            .settle(Duration::from_secs(10))
            .expect("settled");
        assert_eq!((futures.spawned, futures.delivered), (3, 3), "{futures:?}");
        let stats = service.stop();
        assert_eq!((stats.panics, stats.replies_discarded), (0, 0));
    }

    #[test]
    fn a_slow_backend_is_a_gateway_timeout() {
        let timeouts = Timeouts {
            backend: Duration::from_millis(50),
            front: Duration::from_secs(5),
        };
        let service = Service::start(timeouts, Duration::from_secs(5)).expect("started");
        let client = reqwest::Client::new();
        assert_eq!(
            get(&service, &client, "slow").0,
            StatusCode::GATEWAY_TIMEOUT
        );
        // The agent is not stuck: the next quote is answered.
        assert_eq!(get(&service, &client, "nut").0, StatusCode::OK);
        service.stop();
    }

    #[test]
    fn a_slow_agent_is_service_unavailable_and_its_late_reply_counted() {
        let timeouts = Timeouts {
            backend: Duration::from_secs(5),
            front: Duration::from_millis(50),
        };
        let service = Service::start(timeouts, Duration::from_millis(300)).expect("started");
        let client = reqwest::Client::new();
        assert_eq!(
            get(&service, &client, "slow").0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        // The fetch goes on; its answer reaches the agent, whose reply finds nobody waiting.
        let futures = service
            .tasks
            .settle(Duration::from_secs(10))
            .expect("settled");
        assert_eq!(futures.delivered, 1);
        let (status, body) = get(&service, &client, "slow");
        assert_eq!(
            (status, body.contains("99")),
            (StatusCode::OK, true),
            "cached now"
        );
        let stats = service.stop();
        assert_eq!(stats.replies_discarded, 1);
    }
}
