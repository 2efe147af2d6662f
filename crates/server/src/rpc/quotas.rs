//! Client quotas on the data plane, as Kafka's `KafkaApis` applies them to Produce and Fetch:
//! the request's bytes (Produce: the request body, Kafka's `sizeInBytes`; Fetch: the records
//! of the response) are recorded against the byte-rate quota and, for Produce, the handler's
//! time against `request_percentage`; the larger throttle goes into the response's
//! `throttle_time_ms`, the connection is muted for it, and `/metrics` counts it under the quota
//! that set it. A throttled Fetch is answered without its records (Kafka's
//! `getThrottledResponse`), and the bytes it did not send are taken back from the usage.
//!
//! Fetch's handler time is not counted: its handler also waits for data (`max_wait_ms`), which
//! Kafka spends in purgatory, not in a handler thread, and kcoord does not tell the two apart.

use std::time::Duration;

use kcoord_wire::messages::FetchResponse;

use crate::runtime::quotas::{QuotaType, NANOS_TO_PERCENTAGE};
use crate::state::RequestContext;

/// The throttle of a Produce or Fetch answer: `bytes` against the `quota` byte rate and
/// `handler_time`, if given, against `request_percentage` (Kafka leaves the request quota out
/// of acks=0 produces). Mutes the connection and counts the throttle; 0 when no quota applies.
pub(crate) fn throttle(
    ctx: &RequestContext<'_>,
    quota: QuotaType,
    bytes: usize,
    handler_time: Option<Duration>,
) -> u32 {
    let image = ctx.server.cluster.snapshot();
    let quotas = &image.client_quotas;
    if quotas.is_empty() {
        return 0;
    }
    let now = crate::support::clock::now_ms();
    let who = client(ctx);
    let bandwidth = ctx
        .server
        .quotas
        .record(quotas, quota, who, bytes as f64, now);
    let request = handler_time.map_or(0, |time| {
        let percent = time.as_nanos() as f64 * NANOS_TO_PERCENTAGE;
        ctx.server
            .quotas
            .record(quotas, QuotaType::Request, who, percent, now)
    });
    let (by, ms) = if bandwidth > request {
        (quota, bandwidth)
    } else {
        (QuotaType::Request, request)
    };
    if ms > 0 {
        if quota == QuotaType::Fetch {
            // The records are not sent: Kafka's `unrecordQuotaSensor`.
            ctx.server
                .quotas
                .unrecord(quotas, quota, who, bytes as f64, now);
        }
        if let Some(mute) = ctx.mute {
            mute.mute_for(ms);
        }
        ctx.server.metrics.quotas.throttled(by as usize, ms);
    }
    ms
}

/// Whom the quotas count a request for: the principal's name and the header's client id.
fn client<'a>(ctx: &'a RequestContext<'_>) -> (&'a str, &'a str) {
    (
        ctx.principal.name.as_str(),
        ctx.header.client_id.as_deref().unwrap_or(""),
    )
}

/// Throttles a Fetch answer (`session_epoch` of the request): a throttled one loses its
/// partitions, and a new session's id, as Kafka's `getThrottledResponse` answers (only an
/// incremental fetch keeps its session id).
pub(crate) fn throttle_fetch(
    ctx: &RequestContext<'_>,
    response: &mut FetchResponse,
    session_epoch: i32,
) {
    if response.error_code != 0 {
        return;
    }
    let bytes: usize = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.as_ref())
        .map(kcoord_wire::RecordSet::len)
        .sum();
    let ms = throttle(ctx, QuotaType::Fetch, bytes, None);
    if ms == 0 {
        return;
    }
    response.throttle_time_ms = i32::try_from(ms).unwrap_or(i32::MAX);
    response.responses.clear();
    if session_epoch <= 0 {
        response.session_id = 0;
    }
}
