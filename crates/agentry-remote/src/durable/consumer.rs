//! A durable subscription's task: pulls from the durable consumer, delivers each new message
//! to the agent as a request, and acknowledges it once the handler returned (see the
//! ground rules of `durable.rs`).

use super::ledger::{Arrival, Ledger};
use super::{Durable, DurableOptions, DurableSubscription, Durables};
use crate::envelope::Envelope;
use crate::error::{DecodeError, DurableError};
use crate::registry::RemoteMessage;
use crate::stats::inc;
use agentry::Mbox;
use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use async_nats::jetstream::message::AckKind;
use async_nats::{Client, Subject};
use bytes::Bytes;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The header JetStream deduplicates by.
const MSG_ID: &str = "Nats-Msg-Id";

/// Makes (or finds) the stream and the durable consumer `consumer`, and starts pulling.
pub(crate) fn subscribe<T: RemoteMessage>(
    d: &Arc<Durables>,
    name: &str,
    consumer: &str,
    to: &Mbox,
    options: &DurableOptions,
) -> Result<DurableSubscription, DurableError> {
    crate::subject::validate_token(consumer)?;
    if d.core.registry.entry_of::<T>().is_none() {
        return Err(DurableError::NotRegistered(std::any::type_name::<T>()));
    }
    let (subject, stream) = d.ensure_stream(name, options)?;
    let config = pull::Config {
        durable_name: Some(consumer.to_owned()),
        ack_policy: AckPolicy::Explicit,
        deliver_policy: DeliverPolicy::All,
        ack_wait: options.ack_wait,
        max_ack_pending: i64::try_from(options.max_ack_pending.max(1)).unwrap_or(i64::MAX),
        max_deliver: options.max_deliver.map_or(-1, i64::from),
        filter_subject: subject,
        ..Default::default()
    };
    let js = d.js.clone();
    let stream_name = stream.clone();
    let consumer_name = consumer.to_owned();
    let messages = d
        .wait_for(async move {
            let stream = js
                .get_stream(&stream_name)
                .await
                .map_err(|e| e.to_string())?;
            let consumer = stream
                .get_or_create_consumer::<pull::Config>(&consumer_name, config)
                .await
                .map_err(|e| e.to_string())?;
            consumer.messages().await.map_err(|e| e.to_string())
        })?
        .map_err(DurableError::JetStream)?;
    let task = d.handle.spawn(run::<T>(
        Arc::clone(d),
        messages,
        to.clone(),
        options.clone(),
    ));
    Ok(DurableSubscription {
        task,
        stream,
        consumer: consumer.to_owned(),
    })
}

/// Pause after an error of the consumer's message stream.
const ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How a delivered message ended at the agent.
type Done = (Arc<str>, Result<(), agentry::RequestError>);

async fn run<T: RemoteMessage>(
    d: Arc<Durables>,
    mut messages: pull::Stream,
    to: Mbox,
    options: DurableOptions,
) {
    let mut ledger: Ledger<Subject> = Ledger::new(options.remember);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
    let nak = Bytes::from(AckKind::Nak(Some(options.redeliver_delay)));
    let mut errors: u64 = 0;
    loop {
        tokio::select! {
            biased;
            Some((id, outcome)) = done_rx.recv() => {
                let handled = outcome.is_ok();
                let Some(reply) = ledger.finish(&id, handled) else { continue };
                match outcome {
                    Ok(()) => {
                        inc(&d.core.counters.durable_handled);
                        ack(&d.client, reply, Bytes::from_static(b"+ACK")).await;
                    }
                    Err(why) => {
                        let n = inc(&d.core.counters.durable_refused);
                        if n <= 8 || n.is_power_of_two() {
                            tracing::warn!(%id, error = %why, total = n, "durable message not handled; JetStream delivers it again");
                        }
                        ack(&d.client, reply, nak.clone()).await;
                    }
                }
            }
            next = messages.next() => {
                match next {
                    Some(Ok(msg)) => {
                        arrive::<T>(&d, &mut ledger, &to, &done_tx, msg).await;
                    }
                    Some(Err(e)) => {
                        // Missed heartbeats, a reconnection, the consumer gone: the stream
                        // goes on (async-nats pulls again); pause so that a persistent error
                        // cannot spin.
                        errors += 1;
                        if errors <= 8 || errors.is_power_of_two() {
                            tracing::warn!(error = %e, total = errors, "durable consumer");
                        }
                        tokio::time::sleep(ERROR_PAUSE).await;
                    }
                    None => {
                        tracing::error!("durable consumer stream ended; the subscription stops");
                        return;
                    }
                }
            }
        }
    }
}

async fn arrive<T: RemoteMessage>(
    d: &Arc<Durables>,
    ledger: &mut Ledger<Subject>,
    to: &Mbox,
    done: &mpsc::UnboundedSender<Done>,
    msg: async_nats::jetstream::Message,
) {
    inc(&d.core.counters.durable_received);
    let subject = msg.subject.as_str();
    // A pull consumer's messages always carry their ack subject, which holds these.
    let (Some(reply), Ok(info)) = (msg.reply.clone(), msg.info()) else {
        d.core.reject(
            subject,
            DecodeError::malformed("durable message", "no JetStream ack subject"),
        );
        return;
    };
    let meta = AckMeta {
        sequence: info.stream_sequence,
        delivered: u64::try_from(info.delivered).unwrap_or(0),
    };
    if meta.delivered > 1 {
        inc(&d.core.counters.durable_redelivered);
    }
    let id: Arc<str> = match msg.headers.as_ref().and_then(|h| h.get(MSG_ID)) {
        Some(v) => v.as_str().into(),
        None => format!("#{}", meta.sequence).into(),
    };
    match ledger.arrive(&id, reply.clone()) {
        Arrival::Deliver => {}
        Arrival::InFlight => {
            inc(&d.core.counters.durable_duplicates);
            return;
        }
        Arrival::Handled(reply) => {
            inc(&d.core.counters.durable_duplicates);
            ack(&d.client, reply, Bytes::from_static(b"+ACK")).await;
            return;
        }
    }
    let decoded = Envelope::from_nats_payload(&msg.payload).and_then(|(env, body)| {
        d.core
            .registry
            .decode::<T>(&env, &body, d.core.max_payload())
            .map(|message| (message, env.trace))
    });
    let (message, trace) = match decoded {
        Ok(m) => m,
        Err(e) => {
            d.core.reject(subject, e);
            inc(&d.core.counters.durable_terminated);
            if let Some(reply) = ledger.finish(&id, false) {
                ack(&d.client, reply, Bytes::from(AckKind::Term)).await;
            }
            return;
        }
    };
    let pending = d.core.in_sender_context(trace, || {
        to.request_future::<Durable<T>, ()>(Durable {
            message,
            id: Arc::clone(&id),
            sequence: meta.sequence,
            delivered: meta.delivered,
        })
    });
    let done = done.clone();
    tokio::spawn(async move {
        let _ = done.send((id, pending.await));
    });
}

/// Publishes an acknowledgement (`+ACK`, `-NAK`, `+TERM`) to a message's ack subject. A
/// lost one is harmless: JetStream delivers the message again, and the ledger answers.
async fn ack(client: &Client, reply: Subject, kind: Bytes) {
    if let Err(e) = client.publish(reply, kind).await {
        tracing::debug!(error = %e, "durable ack not sent");
    }
}

/// What a delivery's ack subject says about it.
struct AckMeta {
    sequence: u64,
    delivered: u64,
}
