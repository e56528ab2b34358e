//! The raw baselines: a `std::net` TCP round trip and `async-nats` request/reply, both in
//! groups of K with every reply compared with its request.

use super::payload::{DISTINCT, record};
use super::server::RAW_SUBJECT;
use super::{RrResult, RrSpec};
use crate::harness::BenchError;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long one raw request may wait for its reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// K records written back to back, then K × 256 bytes read back and compared.
pub(crate) fn raw_tcp(addr: SocketAddr, spec: &RrSpec) -> Result<RrResult, BenchError> {
    let k = spec.k.max(1);
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(REPLY_TIMEOUT))?;
    let group: Vec<u8> = (0..k as u64).flat_map(record).collect();
    let mut back = vec![0u8; group.len()];
    let deadline = Instant::now() + spec.limit;
    let total = spec.expected();
    let started = Instant::now();
    let mut answered = 0;
    while answered < total && Instant::now() < deadline {
        s.write_all(&group)?;
        s.read_exact(&mut back)?;
        if back != group {
            return Err(BenchError::Verify(format!(
                "the echo of the group after {answered} requests differs"
            )));
        }
        answered += k as u64;
    }
    Ok(RrResult {
        requests: answered,
        elapsed: started.elapsed(),
    })
}

/// K `Client::request` futures at once on a one-thread tokio runtime.
pub(crate) fn raw_nats(url: &str, spec: &RrSpec) -> Result<RrResult, BenchError> {
    use futures_util::StreamExt;
    use futures_util::stream::FuturesUnordered;
    let k = spec.k.max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = async_nats::ConnectOptions::new()
            .request_timeout(Some(REPLY_TIMEOUT))
            .connect(url)
            .await
            .map_err(|e| BenchError::Harness(format!("raw nats: {e}")))?;
        let payloads: Vec<bytes::Bytes> = (0..DISTINCT as u64).map(|i| record(i).into()).collect();
        let deadline = Instant::now() + spec.limit;
        let total = spec.expected();
        let started = Instant::now();
        let mut answered = 0u64;
        while answered < total && Instant::now() < deadline {
            let mut group: FuturesUnordered<_> = (0..k as u64)
                .map(|j| {
                    let p = payloads[((answered + j) % DISTINCT as u64) as usize].clone();
                    let c = client.clone();
                    async move {
                        c.request(RAW_SUBJECT, p.clone())
                            .await
                            .map(|m| m.payload == p)
                    }
                })
                .collect();
            while let Some(r) = group.next().await {
                match r {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(BenchError::Verify(format!(
                            "a raw reply after {answered} requests differs from its request"
                        )));
                    }
                    Err(e) => {
                        return Err(BenchError::Verify(format!(
                            "a raw request after {answered} requests failed: {e}"
                        )));
                    }
                }
            }
            answered += k as u64;
        }
        Ok(RrResult {
            requests: answered,
            elapsed: started.elapsed(),
        })
    })
}
