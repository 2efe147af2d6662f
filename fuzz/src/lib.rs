//! The fuzz targets' bodies, one function per target (`fuzz_targets/*.rs` only call them), and
//! the helpers the seed generator (`examples/make_seeds.rs`) shares with them. Every function
//! takes arbitrary bytes and must neither panic nor allocate without bound; where there is an
//! oracle (a round trip, a frame reassembled), it asserts it.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use kcoord_wire::api::ApiKey;
use kcoord_wire::budget;

/// Selects what [`request_decode`] decodes: a request or response of one API, or a header.
pub struct Selector {
    pub response: bool,
    /// `None`: the request (or response) header.
    pub api: Option<ApiKey>,
    pub version: i16,
}

impl Selector {
    /// The first two bytes: bit 7 of the first chooses responses, its other bits an API (one
    /// past the last is the header); the second is the version, counted from the first valid.
    pub fn read(data: &[u8]) -> Option<(Selector, &[u8])> {
        let (&which, rest) = data.split_first()?;
        let (&version, body) = rest.split_first()?;
        let response = which & 0x80 != 0;
        let index = usize::from(which & 0x7f) % (ApiKey::ALL.len() + 1);
        let api = ApiKey::ALL.get(index).copied();
        let (min, max) = match api {
            Some(api) => (api.valid_versions().min, api.valid_versions().max),
            None if response => (0, 1),
            None => (0, 2),
        };
        let span = i32::from(max) - i32::from(min) + 1;
        let version = (i32::from(min) + i32::from(version) % span) as i16;
        Some((
            Selector {
                response,
                api,
                version,
            },
            body,
        ))
    }

    /// The two bytes [`Selector::read`] turns back into this selector.
    pub fn bytes(response: bool, api: Option<ApiKey>, version: i16) -> [u8; 2] {
        let index = api.map_or(ApiKey::ALL.len(), |a| {
            ApiKey::ALL.iter().position(|k| *k == a).unwrap_or(0)
        });
        let min = api.map_or(0, |a| a.valid_versions().min);
        [
            index as u8 | if response { 0x80 } else { 0 },
            (version - min) as u8,
        ]
    }
}

/// Target `request_decode`: any request or response of any API the schemas define (every one
/// the server serves, generated codecs all), or a header, at a valid version. Requests decode
/// under the server's budget. Whatever decodes must survive encode -> decode unchanged.
pub fn request_decode(data: &[u8]) {
    let Some((selector, body)) = Selector::read(data) else {
        return;
    };
    let mut body = Bytes::copy_from_slice(body);
    let version = selector.version;
    let name = selector.api.map_or("header", ApiKey::name);
    let limit = budget::for_frame(body.len());
    let result = budget::with_limit(limit, || match (selector.api, selector.response) {
        (Some(api), false) => api.request_round_trip(version, &mut body),
        (Some(api), true) => api.response_round_trip(version, &mut body),
        (None, false) => kcoord_wire::codec::decode_round_trip::<
            kcoord_wire::messages::RequestHeader,
        >(version, &mut body),
        (None, true) => kcoord_wire::codec::decode_round_trip::<
            kcoord_wire::messages::ResponseHeader,
        >(version, &mut body),
    });
    if let Some(Err(e)) = result {
        let kind = if selector.response {
            "response"
        } else {
            "request"
        };
        panic!("{name} {kind} v{version}: {e}");
    }
}

/// Target `frame_decode`: a byte stream fed to [`kcoord_wire::frame::FrameDecoder`] in chunks.
/// Every frame it returns must be exactly the next size-prefixed piece of the stream, no larger
/// than the maximum, and the buffer must not grow far beyond what was fed.
///
/// Input: 3 bytes of maximum frame size (up to 16 MiB), 1 byte of chunk size, the stream.
pub fn frame_decode(data: &[u8]) {
    let Some((head, stream)) = data.split_first_chunk::<4>() else {
        return;
    };
    let max = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let chunk = usize::from(head[3]).max(1);
    let decoder = kcoord_wire::frame::FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    let mut consumed = 0usize;
    for (i, piece) in stream.chunks(chunk).enumerate() {
        buf.extend_from_slice(piece);
        let fed = (i * chunk + piece.len()).min(stream.len());
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let size = frame.len();
                    assert!(size <= max, "a {size}-byte frame above the maximum {max}");
                    let prefix = u32::try_from(size).expect("size fits").to_be_bytes();
                    assert_eq!(stream[consumed..consumed + 4], prefix, "size prefix");
                    assert_eq!(
                        frame[..],
                        stream[consumed + 4..consumed + 4 + size],
                        "frame bytes"
                    );
                    consumed += 4 + size;
                }
                Ok(None) => break,
                // The connection is closed: nothing more is read.
                Err(_) => return,
            }
        }
        assert_eq!(
            consumed + buf.len(),
            fed,
            "every byte fed is a frame or buffered"
        );
        // The decoder reserves at most 1 MiB ahead of what is buffered; BytesMut may double.
        assert!(
            buf.capacity() <= 2 * (buf.len() + (1 << 20)) + 4096,
            "{} bytes reserved for {} buffered",
            buf.capacity(),
            buf.len()
        );
    }
}

/// Target `config_parse`: a properties file's bytes, as `Config::load` reads them.
pub fn config_parse(data: &[u8]) {
    let text = kcoord_server::config::properties::decode_file_bytes(data);
    let _ = kcoord_server::config::properties::parse(&text);
    let _ = kcoord_server::Config::parse("fuzz", &text);
}

/// Rewrites every checksum of a format 2 or 3 log image (`KCMLOG02`, `KCMLOG03`) so that
/// mutated bodies get past the checks and reach the record decoders. Leaves anything else as it
/// is.
pub fn fix_log_checksums(bytes: &mut [u8]) {
    const HEADER: usize = 20;
    if bytes.len() < HEADER {
        return;
    }
    // Format 3's bit 31 of a length says the batch goes on; the rest is the length.
    let length_mask = match &bytes[..8] {
        b"KCMLOG02" => u32::MAX,
        b"KCMLOG03" => !(1u32 << 31),
        _ => return,
    };
    let crc = crc32c::crc32c(&bytes[..16]);
    bytes[16..20].copy_from_slice(&crc.to_be_bytes());
    let mut at = HEADER;
    while at + 8 <= bytes.len() {
        let field = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let length = field & length_mask;
        let Some(end) = (length as usize)
            .checked_add(at + 4)
            .filter(|end| *end <= bytes.len() && length >= 4)
        else {
            return;
        };
        let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[at..at + 4]), &bytes[at + 8..end]);
        bytes[at + 4..at + 8].copy_from_slice(&crc.to_be_bytes());
        at = end;
    }
}

/// Target `metadata_log`: a durable log file's bytes (the controller's `metadata.log` and each
/// coordinator shard's have the same format), read as at startup, then replayed as the
/// controller and a coordinator shard replay it.
///
/// Input: 1 mode byte (odd: fix the checksums first, see [`fix_log_checksums`]), the file.
pub fn metadata_log(data: &[u8]) {
    let Some((&mode, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if mode & 1 == 1 {
        fix_log_checksums(&mut file);
    }
    let Ok((log, _cut)) = kcoord_metadata::file_log::read_image(&file) else {
        return;
    };
    let _ = kcoord_controller::Controller::from_log(
        kcoord_controller::ControllerConfig::new("fuzz"),
        &log,
        0,
    );
    let _ = kcoord_coordinator::shard::CoordinatorShard::from_log(
        kcoord_coordinator::StreamsGroupConfig::default(),
        7,
        &log,
        0,
    );
}

/// Rewrites the CRC of every whole magic-2 batch in `bytes` (as a producer computes it).
pub fn fix_batch_crcs(bytes: &mut [u8]) {
    let mut at = 0usize;
    while at + 61 <= bytes.len() {
        let length =
            i32::from_be_bytes([bytes[at + 8], bytes[at + 9], bytes[at + 10], bytes[at + 11]]);
        let Some(end) = usize::try_from(length)
            .ok()
            .and_then(|l| l.checked_add(at + 12))
            .filter(|end| *end <= bytes.len() && *end >= at + 61)
        else {
            return;
        };
        let _ = kcoord_record_batches::write_crc(&mut bytes[at..end]);
        at = end;
    }
}

/// Target `record_batch`: a Produce request's `records` bytes through the record batch parser
/// (splitting, headers, CRCs, decompression, records) and the leader's validation.
///
/// Input: 1 mode byte (bit 0: fix the CRCs; bits 1-2: the topic's compression setting; bit 3:
/// compacted; bits 4-7: the Produce version), the records.
pub fn record_batch(data: &[u8]) {
    use kcoord_storage::validate::{
        has_transactional_records, validate_produce, ProduceContext, TopicCompression,
        ValidationConfig,
    };
    // Small, so that an input that decompresses to the bound (and is recompressed for the
    // topic's codec) costs milliseconds, not tens of them: the bound's own path is reached
    // all the same. At 1 MiB the target ran about 360 inputs a second.
    const MAX_UNCOMPRESSED: usize = 64 << 10;
    let Some((&mode, records)) = data.split_first() else {
        return;
    };
    let mut records = records.to_vec();
    if mode & 1 == 1 {
        fix_batch_crcs(&mut records);
    }
    let records = Bytes::from(records);
    for batch in kcoord_record_batches::split_batches(records.clone()) {
        let Ok((header, bytes)) = batch else { break };
        let _ = header.compression();
        let _ = header.last_sequence();
        let _ = header.delete_horizon_ms();
        let batch = kcoord_record_batches::RecordBatch::parse(bytes.clone())
            .unwrap_or_else(|_| kcoord_record_batches::RecordBatch::from_parts(header, bytes));
        let _ = batch.verify_crc();
        if let Ok(records) = batch.records(MAX_UNCOMPRESSED) {
            for record in records {
                let Ok(record) = record else { break };
                let _ = record.offset(batch.header());
                let _ = record.timestamp(batch.header());
                let _ = record.sequence(batch.header());
                let mut out = Vec::new();
                let _ = record.encode(&mut out);
            }
        }
    }
    let compression = match (mode >> 1) & 3 {
        0 => TopicCompression::Producer,
        1 => TopicCompression::Codec {
            codec: kcoord_record_batches::Compression::None,
            level: None,
        },
        2 => TopicCompression::Codec {
            codec: kcoord_record_batches::Compression::Gzip,
            level: None,
        },
        _ => TopicCompression::Codec {
            codec: kcoord_record_batches::Compression::Zstd,
            level: Some(3),
        },
    };
    let config = ValidationConfig {
        compacted: mode & 8 != 0,
        compression,
        max_uncompressed_bytes: MAX_UNCOMPRESSED,
        ..ValidationConfig::default()
    };
    let context = ProduceContext {
        api_version: 3 + i16::from(mode >> 4) % 11,
        topic: "fuzz",
        partition: 0,
    };
    let _ = has_transactional_records([&records]);
    if let Ok(validated) = validate_produce(&records, &config, &context, 1_700_000_000_000) {
        let _ = validated.to_leader_bytes(42, 0);
    }
}

/// A node for [`dispatch`]: its state, with the controller and coordinator shards running on
/// a single-threaded runtime whose clock is paused (so a request that waits, a Fetch's
/// `max_wait_ms`, a join's delay, takes no real time).
struct Node {
    runtime: tokio::runtime::Runtime,
    state: Arc<kcoord_server::state::ServerState>,
    _stop: tokio::sync::watch::Sender<bool>,
    inputs: u32,
}

/// A fresh node now and then, so that what inputs created (topics, groups) cannot pile up
/// over millions of runs.
const INPUTS_PER_NODE: u32 = 256;

/// How long (on the paused clock) a request may go unanswered before the client closes the
/// connection, as a client's request timeout does. A Fetch may ask to wait for weeks, and the
/// background tasks' periodic timers fire all the way through simulated time, at a real CPU
/// cost per tick.
const CLIENT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// The node's config: one broker and one controller listener, two coordinator shards.
pub const NODE_CONFIG: &str = "node.id=1
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
offsets.topic.num.partitions=2
";

impl Node {
    fn new() -> Node {
        use kcoord_server::config::{ListenerKind, SecurityProtocol};
        use kcoord_server::runtime::cluster::ListenerInfo;
        use kcoord_server::state::ServerState;
        let config = kcoord_server::Config::parse("fuzz", NODE_CONFIG)
            .unwrap_or_else(|e| panic!("the fuzz node's config: {e}"));
        let listener = |name: &str, kind, port| ListenerInfo {
            name: name.to_owned(),
            kind,
            security_protocol: SecurityProtocol::Plaintext,
            local_addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            advertised_host: "127.0.0.1".to_owned(),
            advertised_port: port,
            upstream_broker: None,
        };
        let listeners = vec![
            listener("PLAINTEXT", ListenerKind::Broker, 9092),
            listener("CONTROLLER", ListenerKind::Controller, 9093),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap_or_else(|e| panic!("a runtime: {e}"));
        let (state, background) = ServerState::build(Arc::new(config), listeners);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        runtime.block_on(async { drop(background.spawn(&stop_rx)) });
        Node {
            runtime,
            state: Arc::new(state),
            _stop: stop,
            inputs: 0,
        }
    }
}

static NODE: Mutex<Option<Node>> = Mutex::new(None);

/// Target `dispatch`: request frames on one connection, through the server's request handling
/// (header, version checks, decoding, every handler, encoding) with its controller and
/// coordinator shards running. A response must be a whole frame that answers the request's
/// correlation id; a close ends the connection.
///
/// Input: 1 byte (bit 0: the controller listener), then frames, each a 2-byte big-endian length
/// and that many bytes (fewer at the end).
pub fn dispatch(data: &[u8]) {
    use kcoord_server::config::ListenerKind;
    use kcoord_server::rpc::dispatch::{dispatch, Connection, Reply};
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let mut guard = NODE.lock().unwrap_or_else(PoisonError::into_inner);
    if guard.as_ref().is_none_or(|n| n.inputs >= INPUTS_PER_NODE) {
        *guard = None; // the old node's tasks stop with its runtime
        *guard = Some(Node::new());
    }
    let Some(node) = guard.as_mut() else { return };
    node.inputs += 1;
    let kind = if flags & 1 == 1 {
        ListenerKind::Controller
    } else {
        ListenerKind::Broker
    };
    let Some(listener) = node
        .state
        .listeners
        .iter()
        .find(|l| l.kind == kind)
        .cloned()
    else {
        return;
    };
    let conn = Connection::new(
        Arc::clone(&node.state),
        listener,
        std::net::SocketAddr::from(([127, 0, 0, 1], 40000)),
    );
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_be_bytes(*len)).min(tail.len());
        let (frame, next) = tail.split_at(len);
        rest = next;
        let request = dispatch(&conn, Bytes::copy_from_slice(frame));
        let outcome = node
            .runtime
            .block_on(async { tokio::time::timeout(CLIENT_PATIENCE, request).await });
        // The client gave up and closed the connection.
        let Ok(outcome) = outcome else { return };
        match outcome {
            Reply::Respond(response) => {
                let response = response.to_bytes();
                let size = u32::from_be_bytes(response[..4].try_into().expect("a size prefix"));
                assert_eq!(size as usize, response.len() - 4, "the size prefix");
                assert_eq!(
                    response.get(4..8),
                    frame.get(4..8),
                    "the response answers the request's correlation id"
                );
            }
            Reply::NoResponse => {}
            // Last: a failed SASL exchange's answer, then the close (no SASL listener here);
            // Later: only a gateway forwards, and this node is none.
            Reply::Close | Reply::Last(_) | Reply::Later(_) => return,
        }
    }
}

/// A request header, at the API's header version for `version`.
pub fn request_header(api: ApiKey, version: i16, correlation_id: i32) -> BytesMut {
    let header = kcoord_wire::messages::RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id,
        client_id: Some("fuzz".to_owned()),
        ..Default::default()
    };
    let mut out = BytesMut::new();
    kcoord_wire::Encodable::encode(&header, &mut out, api.request_header_version(version))
        .unwrap_or_else(|e| panic!("{} v{version} header: {e}", api.name()));
    out
}

/// A request frame body: header and body.
pub fn request_frame<R: kcoord_wire::Encodable>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &R,
) -> Bytes {
    let mut out = request_header(api, version, correlation_id);
    body.encode(&mut out, version)
        .unwrap_or_else(|e| panic!("{} v{version}: {e}", api.name()));
    out.freeze()
}

/// Frames in [`dispatch`]'s input format.
pub fn dispatch_input(controller: bool, frames: &[Bytes]) -> Vec<u8> {
    let mut out = vec![u8::from(controller)];
    for f in frames {
        let len = u16::try_from(f.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&f[..usize::from(len)]);
    }
    out
}
