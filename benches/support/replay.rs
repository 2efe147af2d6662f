//! The load generator of `load` (and `security`): C connections, each keeping P requests in
//! flight, as fast as the answers come. Requests are encoded once and resent with the
//! correlation id patched in; answers are compared with the first one byte for byte (see
//! [`Repeat`], and [`Heartbeats`] for the replayed streams members), so the generator stays
//! cheap next to the daemon it shares the machine with. A connection is plain TCP, TLS or
//! SASL over TLS, as its [`Dial`] says.
#![allow(dead_code)] // each bench uses its own part

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kcoord_client::streams::{HeartbeatOutcome, MemberState, StreamsMember};
use kcoord_wire::api::ApiKey;
use kcoord_wire::frame::{write_frame, FrameDecoder};
use kcoord_wire::messages::{RequestHeader, ResponseHeader};
use kcoord_wire::{Decodable, Encodable};
use tokio::io::AsyncReadExt;

use crate::fleet;
use crate::secure::Dial;

/// Most latency samples kept per run (400 MB of `u32`s would be 100 M; this is 160 MB).
pub const MAX_SAMPLES: usize = 40_000_000;
/// A connection that gets no response for this long is counted as failed.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);
const READ_CHUNK: usize = 64 * 1024;

/// Produces the requests of one connection and judges their responses. One instance per
/// connection, so a stateful workload (the heartbeat one: its share of the members) keeps its
/// state here.
pub trait Generator: Send + 'static {
    /// Appends one complete request frame (size prefix included) with this correlation id.
    /// `Err` counts as an error and stops the connection from sending more.
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut) -> Result<(), String>;
    /// Judges one response frame (without the size prefix; its correlation id already
    /// matched). `Err` counts as an error.
    fn check_response(&mut self, frame: &[u8]) -> Result<(), String>;
    /// The generator back after the run (the heartbeat workload takes its members back).
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// Checks a version against the API's range.
pub fn check_version(api: ApiKey, version: i16) -> Result<(), String> {
    let range = api.valid_versions();
    if version < range.min || version > range.max {
        return Err(format!(
            "{} has versions {}..{}, not {version}",
            api.name(),
            range.min,
            range.max
        ));
    }
    Ok(())
}

/// The same request over and over. The frame is encoded once; only the correlation id changes.
/// The first response is decoded and checked in full; every later one must be byte-identical
/// to it apart from the correlation id (the answers of these read-only APIs do not change).
pub struct Repeat {
    frame: Vec<u8>,
    version: i16,
    response_header_version: i16,
    check_first: fn(&mut Bytes, i16) -> Result<(), String>,
    expected: Option<Vec<u8>>,
}

/// Offset of the correlation id in a request frame: size (4), api key (2), version (2).
const CORRELATION_ID_AT: usize = 8;

impl Repeat {
    pub fn new<R: Encodable>(
        api: ApiKey,
        version: i16,
        request: &R,
        check_first: fn(&mut Bytes, i16) -> Result<(), String>,
    ) -> Result<Repeat, String> {
        check_version(api, version)?;
        let header = RequestHeader {
            request_api_key: api.key(),
            request_api_version: version,
            correlation_id: 0,
            client_id: Some("kcoord-load".into()),
            ..Default::default()
        };
        let header_version = api.request_header_version(version);
        let mut frame = BytesMut::new();
        write_frame(&mut frame, |buf| {
            header
                .encode(buf, header_version)
                .map_err(|e| e.to_string())?;
            request.encode(buf, version).map_err(|e| e.to_string())
        })
        .map_err(|e| format!("cannot encode the {} v{version} request: {e}", api.name()))?;
        Ok(Repeat {
            frame: frame.to_vec(),
            version,
            response_header_version: api.response_header_version(version),
            check_first,
            expected: None,
        })
    }
}

impl Generator for Repeat {
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut) -> Result<(), String> {
        let start = out.len();
        out.extend_from_slice(&self.frame);
        out[start + CORRELATION_ID_AT..start + CORRELATION_ID_AT + 4]
            .copy_from_slice(&correlation_id.to_be_bytes());
        Ok(())
    }

    fn check_response(&mut self, frame: &[u8]) -> Result<(), String> {
        let rest = frame
            .get(4..)
            .ok_or("response shorter than its correlation id")?;
        match &self.expected {
            Some(expected) if expected.as_slice() == rest => Ok(()),
            Some(_) => Err("response differs from the first one".into()),
            None => {
                let mut bytes = Bytes::copy_from_slice(frame);
                ResponseHeader::decode(&mut bytes, self.response_header_version)
                    .map_err(|e| format!("response header: {e}"))?;
                (self.check_first)(&mut bytes, self.version)?;
                if bytes.has_remaining() {
                    return Err(format!(
                        "{} bytes left after the response body",
                        bytes.remaining()
                    ));
                }
                self.expected = Some(rest.to_vec());
                Ok(())
            }
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// One request frame per member, sent round robin (so no member has two in flight while a
/// connection holds more members than requests in flight). Each frame is encoded once and
/// resent with the correlation id patched in; a member's first answer is checked by
/// `check_first`, every later one must equal it byte for byte (steady heartbeats: nothing
/// changes).
pub struct Rotation {
    frames: Vec<Vec<u8>>,
    expected: Vec<Option<Vec<u8>>>,
    response_header_version: i16,
    check_first: fn(&mut Bytes) -> Result<(), String>,
    next: usize,
    /// Member slots of the requests in flight, oldest first.
    in_flight: VecDeque<usize>,
}

impl Rotation {
    pub fn new<R: Encodable>(
        api: ApiKey,
        version: i16,
        requests: &[R],
        check_first: fn(&mut Bytes) -> Result<(), String>,
    ) -> Result<Rotation, String> {
        check_version(api, version)?;
        let frames = requests
            .iter()
            .map(|r| {
                let mut frame = BytesMut::new();
                fleet::encode_request(api, version, 0, r, &mut frame)?;
                Ok(frame.to_vec())
            })
            .collect::<Result<Vec<_>, String>>()?;
        if frames.is_empty() {
            return Err("a rotation needs at least one request".into());
        }
        Ok(Rotation {
            expected: vec![None; frames.len()],
            frames,
            response_header_version: api.response_header_version(version),
            check_first,
            next: 0,
            in_flight: VecDeque::new(),
        })
    }
}

impl Generator for Rotation {
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut) -> Result<(), String> {
        let slot = self.next;
        self.next = (self.next + 1) % self.frames.len();
        let start = out.len();
        out.extend_from_slice(&self.frames[slot]);
        out[start + CORRELATION_ID_AT..start + CORRELATION_ID_AT + 4]
            .copy_from_slice(&correlation_id.to_be_bytes());
        self.in_flight.push_back(slot);
        Ok(())
    }

    fn check_response(&mut self, frame: &[u8]) -> Result<(), String> {
        let slot = self
            .in_flight
            .pop_front()
            .ok_or("an answer nobody asked for")?;
        let rest = frame
            .get(4..)
            .ok_or("response shorter than its correlation id")?;
        match &self.expected[slot] {
            Some(expected) if expected.as_slice() == rest => Ok(()),
            Some(_) => Err("response differs from the member's first one".into()),
            None => {
                let mut bytes = Bytes::copy_from_slice(frame);
                ResponseHeader::decode(&mut bytes, self.response_header_version)
                    .map_err(|e| format!("response header: {e}"))?;
                (self.check_first)(&mut bytes)?;
                self.expected[slot] = Some(rest.to_vec());
                Ok(())
            }
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Heartbeats of one connection's share of the members. The member that waited longest goes
/// next; a member has at most one heartbeat in flight. With [`ClientMode::Member`] each
/// request is the member's own `prepare_heartbeat` and each response goes to its
/// `handle_response`. With [`ClientMode::Replay`] that happens only for a member's first
/// heartbeat: its request frame is kept and resent with the correlation id patched in, and
/// every later answer must equal the first one byte for byte, as in [`Repeat`]. In steady
/// state neither the request nor the answer changes, so the member, which handled that first
/// answer, is left in the state the full path would leave it in.
pub struct Heartbeats {
    /// (index in the fleet, member)
    pub members: Vec<(usize, StreamsMember)>,
    /// Per member (same slots as `members`); used in replay mode only.
    replays: Vec<Replayed>,
    ready: VecDeque<usize>,
    /// (member slot, correlation id)
    in_flight: VecDeque<(usize, i32)>,
    version: i16,
    always_owned: bool,
    client: ClientMode,
}

/// One member's replay: what it sends and what the coordinator answers in steady state.
#[derive(Default)]
struct Replayed {
    /// The request frame (size prefix included) with correlation id 0.
    request: Option<Box<[u8]>>,
    /// The accepted answer after its correlation id.
    answer: Option<Box<[u8]>>,
}

impl Heartbeats {
    pub fn new(
        members: Vec<(usize, StreamsMember)>,
        version: i16,
        always_owned: bool,
        client: ClientMode,
    ) -> Heartbeats {
        Heartbeats {
            ready: (0..members.len()).collect(),
            in_flight: VecDeque::with_capacity(members.len()),
            replays: (0..members.len()).map(|_| Replayed::default()).collect(),
            members,
            version,
            always_owned,
            client,
        }
    }
}

impl Generator for Heartbeats {
    fn write_request(&mut self, correlation_id: i32, out: &mut BytesMut) -> Result<(), String> {
        let at = self
            .ready
            .pop_front()
            .ok_or("more heartbeats in flight than members")?;
        let start = out.len();
        let replay = self.client == ClientMode::Replay;
        match &self.replays[at].request {
            Some(frame) if replay => out.extend_from_slice(frame),
            _ => {
                let member = &mut self.members[at].1;
                let request = fleet::next_heartbeat(member, self.always_owned)?;
                fleet::encode_request(
                    ApiKey::StreamsGroupHeartbeat,
                    self.version,
                    if replay { 0 } else { correlation_id },
                    &request,
                    out,
                )?;
                if replay {
                    self.replays[at].request = Some(out[start..].into());
                }
            }
        }
        if replay {
            out[start + CORRELATION_ID_AT..start + CORRELATION_ID_AT + 4]
                .copy_from_slice(&correlation_id.to_be_bytes());
        }
        self.in_flight.push_back((at, correlation_id));
        Ok(())
    }

    fn check_response(&mut self, frame: &[u8]) -> Result<(), String> {
        let (at, id) = self
            .in_flight
            .pop_front()
            .ok_or("a heartbeat response nobody asked for")?;
        self.ready.push_back(at);
        let member = &mut self.members[at].1;
        if self.client == ClientMode::Member {
            return handle_heartbeat_response(member, self.version, id, frame);
        }
        let slot = &mut self.replays[at];
        let Some(answer) = &slot.answer else {
            let result = handle_heartbeat_response(member, self.version, id, frame);
            match result {
                Ok(()) => slot.answer = Some(frame[4..].into()),
                // The member's next request may differ (full state after an error, a rejoin).
                Err(_) => slot.request = None,
            }
            return result;
        };
        let got = frame
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if got != Some(id) {
            return Err(format!("expected correlation id {id}, got {got:?}"));
        }
        if frame[4..] == **answer {
            return Ok(());
        }
        // Let the member see what changed, for the message and for its state; its next
        // heartbeat goes the full path again.
        *slot = Replayed::default();
        handle_heartbeat_response(member, self.version, id, frame)?;
        Err(format!(
            "steady-state heartbeat of {} in {}: response differs from the member's first one",
            member.member_id(),
            member.group_id()
        ))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Hands a heartbeat response to its member; anything but an accepted heartbeat that leaves
/// the member Stable at the same epoch, with no assignment change and no topology description
/// asked for, is an error.
fn handle_heartbeat_response(
    member: &mut StreamsMember,
    version: i16,
    correlation_id: i32,
    frame: &[u8],
) -> Result<(), String> {
    let epoch = member.member_epoch();
    let outcome = fleet::apply_response(
        member,
        version,
        correlation_id,
        Bytes::copy_from_slice(frame),
    )?;
    match outcome {
        HeartbeatOutcome::Accepted {
            assignment_changed: false,
        } if member.state() == MemberState::Stable && member.member_epoch() == epoch => {
            match member.topology_description_id() {
                None => Ok(()),
                Some(id) => Err(format!(
                    "steady-state heartbeat of {} in {}: the coordinator asks for a topology description push ({id})",
                    member.member_id(),
                    member.group_id()
                )),
            }
        }
        other => Err(format!(
            "steady-state heartbeat of {} in {}: {other:?}, state {:?}, epoch {epoch} -> {}",
            member.member_id(),
            member.group_id(),
            member.state(),
            member.member_epoch()
        )),
    }
}

/// How the heartbeat workload produces requests and judges answers (`--client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMode {
    /// Each member's steady-state request and answer recorded once, then replayed.
    Replay,
    /// Every request and answer through the member.
    Member,
}

impl ClientMode {
    pub fn name(self) -> &'static str {
        match self {
            ClientMode::Replay => "replay",
            ClientMode::Member => "member",
        }
    }
}

/// What one connection measured.
#[derive(Default)]
pub struct ConnResult {
    /// Requests sent after the warm-up and answered before the end.
    pub requests: u64,
    /// Their latencies in ns (at most the connection's share of `MAX_SAMPLES`).
    pub latencies_ns: Vec<u32>,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl ConnResult {
    fn error(&mut self, count: u64, reason: String) {
        self.errors += count;
        self.first_error.get_or_insert(reason);
    }
}

/// Timeline of a run, shared by its connections.
pub struct Window {
    pub measure_from: Instant,
    pub end: Instant,
}

/// One connection of a run: connects as `dial` says (TLS and SASL included: that happens in
/// the warm-up), keeps `inflight` requests of `generator` in flight until the window ends,
/// then waits for the answers still due.
pub async fn run_connection(
    dial: Dial,
    mut generator: Box<dyn Generator>,
    inflight: usize,
    window: Arc<Window>,
    max_samples: usize,
) -> (ConnResult, Box<dyn Generator>) {
    let mut result = ConnResult::default();
    let mut stream = match dial.connect().await {
        Ok(stream) => stream,
        Err(e) => {
            result.error(1, e);
            return (result, generator);
        }
    };
    let decoder = FrameDecoder::new(64 * 1024 * 1024);
    let mut sent: VecDeque<(i32, Instant)> = VecDeque::with_capacity(inflight);
    let mut out = BytesMut::with_capacity(inflight * 64);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut next_id: i32 = 0;
    // A generator that failed to write a request sends no more.
    let mut sending = true;

    let now = Instant::now();
    for _ in 0..inflight {
        match generator.write_request(next_id, &mut out) {
            Ok(()) => {
                sent.push_back((next_id, now));
                next_id = next_id.wrapping_add(1);
            }
            Err(e) => {
                result.error(1, e);
                sending = false;
                break;
            }
        }
    }
    if let Err(e) = stream.write_flushed(&out).await {
        result.error(sent.len() as u64, format!("write: {e}"));
        return (result, generator);
    }
    out.clear();

    while !sent.is_empty() {
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        match tokio::time::timeout(STALL_TIMEOUT, stream.read_buf(&mut buf)).await {
            Ok(Ok(0)) => {
                result.error(sent.len() as u64, "the server closed the connection".into());
                return (result, generator);
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                result.error(sent.len() as u64, format!("read: {e}"));
                return (result, generator);
            }
            Err(_) => {
                result.error(
                    sent.len() as u64,
                    format!("no response for {STALL_TIMEOUT:?}"),
                );
                return (result, generator);
            }
        }
        let now = Instant::now();
        let more = sending && now < window.end;
        loop {
            let frame = match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    result.error(sent.len() as u64, format!("response framing: {e}"));
                    return (result, generator);
                }
            };
            let Some((correlation_id, sent_at)) = sent.pop_front() else {
                result.error(1, "a response nobody asked for".into());
                return (result, generator);
            };
            let got = frame
                .get(..4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            if got != Some(correlation_id) {
                result.error(
                    sent.len() as u64 + 1,
                    format!("expected correlation id {correlation_id}, got {got:?}"),
                );
                return (result, generator);
            }
            match generator.check_response(&frame) {
                Ok(()) => {
                    if sent_at >= window.measure_from && now <= window.end {
                        result.requests += 1;
                        if result.latencies_ns.len() < max_samples {
                            let ns = now.duration_since(sent_at).as_nanos();
                            result
                                .latencies_ns
                                .push(u32::try_from(ns).unwrap_or(u32::MAX));
                        }
                    }
                }
                Err(e) => result.error(1, e),
            }
            if more && sending {
                match generator.write_request(next_id, &mut out) {
                    Ok(()) => {
                        sent.push_back((next_id, now));
                        next_id = next_id.wrapping_add(1);
                    }
                    Err(e) => {
                        result.error(1, e);
                        sending = false;
                    }
                }
            }
        }
        if !out.is_empty() {
            if let Err(e) = stream.write_flushed(&out).await {
                result.error(sent.len() as u64, format!("write: {e}"));
                return (result, generator);
            }
            out.clear();
        }
    }
    (result, generator)
}

/// What the connections of one run measured together.
pub struct Measured {
    pub requests: u64,
    /// Sorted latencies (ns).
    pub latencies_ns: Vec<u32>,
    pub errors: u64,
    pub first_error: Option<String>,
    /// CPU seconds in the measured window: the daemon's (if its pid is known) and this
    /// process's.
    pub daemon_cpu_s: Option<f64>,
    pub client_cpu_s: Option<f64>,
}

/// Runs one generator per connection, each connection made by `dial`, for `warmup` then
/// `seconds` measured; gives the generators back (a connection task that failed loses its
/// generator, and counts `inflight` errors).
pub async fn measure(
    dial: &Dial,
    generators: Vec<Box<dyn Generator>>,
    inflight: usize,
    warmup: f64,
    seconds: f64,
    daemon_pid: Option<u32>,
) -> (Measured, Vec<Box<dyn Generator>>) {
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(warmup);
    let window = Arc::new(Window {
        measure_from,
        end: measure_from + Duration::from_secs_f64(seconds),
    });
    let max_samples = (MAX_SAMPLES / generators.len().max(1)).max(1);
    let mut tasks = Vec::with_capacity(generators.len());
    for generator in generators {
        tasks.push(tokio::spawn(run_connection(
            dial.clone(),
            generator,
            inflight,
            Arc::clone(&window),
            max_samples,
        )));
    }
    // CPU time over the measured window.
    let daemon = daemon_pid.map(|p| p.to_string());
    let cpu = |pid: &Option<String>| pid.as_deref().and_then(fleet::cpu_seconds);
    let me = Some("self".to_string());
    tokio::time::sleep_until(measure_from.into()).await;
    let (daemon_before, client_before) = (cpu(&daemon), cpu(&me));
    tokio::time::sleep_until(window.end.into()).await;
    let (daemon_after, client_after) = (cpu(&daemon), cpu(&me));
    let delta = |a: Option<f64>, b: Option<f64>| Some(b? - a?);

    let mut measured = Measured {
        requests: 0,
        latencies_ns: Vec::new(),
        errors: 0,
        first_error: None,
        daemon_cpu_s: delta(daemon_before, daemon_after),
        client_cpu_s: delta(client_before, client_after),
    };
    let mut back = Vec::new();
    for task in tasks {
        match task.await {
            Ok((r, generator)) => {
                measured.requests += r.requests;
                measured.errors += r.errors;
                measured.first_error = measured.first_error.or(r.first_error);
                measured.latencies_ns.extend(r.latencies_ns);
                back.push(generator);
            }
            Err(e) => {
                measured.errors += inflight as u64;
                measured.first_error = measured
                    .first_error
                    .or(Some(format!("connection task failed: {e}")));
            }
        }
    }
    measured.latencies_ns.sort_unstable();
    (measured, back)
}

/// Splits `members` over `connections` heartbeat generators: member `i` goes to connection
/// `i % C`.
pub fn heartbeat_generators(
    members: Vec<StreamsMember>,
    connections: usize,
    version: i16,
    always_owned: bool,
    client: ClientMode,
) -> Vec<Box<dyn Generator>> {
    let mut shares: Vec<Vec<(usize, StreamsMember)>> =
        (0..connections).map(|_| Vec::new()).collect();
    for (i, m) in members.into_iter().enumerate() {
        shares[i % connections].push((i, m));
    }
    shares
        .into_iter()
        .map(|share| {
            Box::new(Heartbeats::new(share, version, always_owned, client)) as Box<dyn Generator>
        })
        .collect()
}

/// The members back from the generators of a heartbeat run, in their original order.
pub fn return_members(generators: Vec<Box<dyn Generator>>) -> Result<Vec<StreamsMember>, String> {
    let mut all = Vec::new();
    for g in generators {
        let hb = g
            .into_any()
            .downcast::<Heartbeats>()
            .map_err(|_| "not a heartbeat generator".to_string())?;
        all.extend(hb.members);
    }
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, m)| m).collect())
}
