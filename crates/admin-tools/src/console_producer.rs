//! `kafka-console-producer`, after Apache Kafka's `ConsoleProducer` and `LineMessageReader`:
//! reads lines from stdin and sends each as one record.
//!
//! ```text
//! kafka-console-producer --bootstrap-server HOST:PORT --topic TOPIC
//!     [--property parse.key=true --property key.separator=:] [--compression-codec [CODEC]]
//!     [--request-required-acks -1|0|1|all] [--request-timeout-ms MS]
//!     [--message-send-max-retries N] [--retry-backoff-ms MS] [--sync]
//! ```
//!
//! A line is `value`, `key<key.separator>value` with `parse.key=true`, and
//! `h1:v1,h2:v2<headers.delimiter>...` in front with `parse.headers=true`; `null.marker`
//! makes a field null and `ignore.error=true` reads a line without a separator as a value.
//! `--reader-property` is a synonym of `--property` (Kafka 4.2 renamed it). A keyed record
//! goes to the partition Kafka's default partitioner picks (murmur2 of the key), the others
//! round robin over the partitions.
//!
//! Before the first record the topic is looked up with Metadata asking for it to be created
//! (as Kafka's producer does; the server creates it when `auto.create.topics.enable=true`).
//! A topic that still does not exist ends the tool with status 1. Idempotence is on with
//! `--request-required-acks -1` (the default) and off otherwise, as Kafka's producer decides
//! when acks is set and `enable.idempotence` is not.
//!
//! A record that cannot be sent is reported on stderr as Kafka's `ErrorLoggingCallback` does
//! (`Error when sending message to topic T with key: ..., value: ... with error: ...`) and
//! the tool goes on, exiting 0 at the end of the input as Kafka's does; with `--sync` the
//! first failure exits 1. A line the reader cannot parse exits 1.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use kcoord_client::produce::partition_for_key;
use kcoord_client::{Client, ClientError, ProducedRecord, Producer, ProducerConfig};
use kcoord_record_batches::Compression;
use kcoord_wire::ErrorCode;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::console::{is_true, parse_args, properties, report};

/// Metadata requests asking for the topic before giving up (the server creates a topic
/// before answering, so the second one normally shows it).
const METADATA_ATTEMPTS: u32 = 5;

#[derive(Debug, Parser)]
#[command(
    name = "kafka-console-producer",
    version,
    infer_long_args = true,
    after_help = crate::command_config::HELP,
    about = "This tool helps to read data from standard input and publish it to Kafka."
)]
struct Args {
    /// REQUIRED: The server(s) to connect to. The broker list string in the form HOST1:PORT1,HOST2:PORT2.
    #[arg(long, value_name = "server to connect to")]
    bootstrap_server: String,
    /// REQUIRED: The topic name to produce messages to.
    #[arg(long, value_name = "topic")]
    topic: String,
    /// Properties of the line reader, key=value: parse.key, key.separator (tab), parse.headers,
    /// headers.delimiter (tab), headers.separator (,), headers.key.separator (:), null.marker,
    /// ignore.error.
    #[arg(long, value_name = "prop")]
    property: Vec<String>,
    /// The same as --property.
    #[arg(long, value_name = "prop", conflicts_with = "property")]
    reader_property: Vec<String>,
    /// The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'. If specified without value, then it defaults to 'gzip'.
    #[arg(long, value_name = "compression-codec", num_args = 0..=1, default_missing_value = "gzip")]
    compression_codec: Option<String>,
    /// The required `acks` of the producer requests: all, -1, 0 or 1.
    #[arg(
        long,
        value_name = "request required acks",
        default_value = "-1",
        allow_hyphen_values = true
    )]
    request_required_acks: String,
    /// The ack timeout of the producer requests. Value must be non-negative and non-zero.
    #[arg(long, value_name = "request timeout ms", default_value_t = 1500)]
    request_timeout_ms: u64,
    /// How many times a failed send is retried before the record is given up.
    #[arg(long, value_name = "retries", default_value_t = 3)]
    message_send_max_retries: u32,
    /// The wait before the first retry; it doubles with each one, up to 1 s.
    #[arg(long, value_name = "ms", default_value_t = 100)]
    retry_backoff_ms: u64,
    /// Stop at the first record that cannot be sent (records are always sent one at a time).
    #[arg(long)]
    sync: bool,
    /// Producer config properties file (client.id, request.timeout.ms, security.protocol with its
    /// sasl.* and ssl.* keys). Note that --command-property takes precedence over this config.
    #[arg(long, value_name = "config file", alias = "producer.config")]
    command_config: Option<String>,
    /// Producer config properties in the form key=value.
    #[arg(long, value_name = "config property", alias = "producer-property")]
    command_property: Vec<String>,
}

/// `LineMessageReader`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LineReader {
    parse_key: bool,
    key_separator: String,
    parse_headers: bool,
    headers_delimiter: String,
    headers_separator: String,
    headers_key_separator: String,
    ignore_error: bool,
    null_marker: Option<String>,
}

impl LineReader {
    /// `LineMessageReader.configure`, with its checks and messages.
    fn configure(props: &HashMap<String, String>) -> Result<LineReader, String> {
        let get = |key: &str, default: &str| {
            props
                .get(key)
                .cloned()
                .unwrap_or_else(|| default.to_string())
        };
        let reader = LineReader {
            parse_key: props.get("parse.key").is_some_and(|v| is_true(v)),
            key_separator: get("key.separator", "\t"),
            parse_headers: props.get("parse.headers").is_some_and(|v| is_true(v)),
            headers_delimiter: get("headers.delimiter", "\t"),
            headers_separator: get("headers.separator", ","),
            headers_key_separator: get("headers.key.separator", ":"),
            ignore_error: props.get("ignore.error").is_some_and(|v| is_true(v)),
            null_marker: props.get("null.marker").cloned(),
        };
        let r = &reader;
        let pairs = [
            (
                &r.headers_delimiter,
                &r.headers_separator,
                "headers.delimiter and headers.separator",
            ),
            (
                &r.headers_delimiter,
                &r.headers_key_separator,
                "headers.delimiter and headers.key.separator",
            ),
            (
                &r.headers_separator,
                &r.headers_key_separator,
                "headers.separator and headers.key.separator",
            ),
        ];
        for (a, b, names) in pairs {
            if a == b {
                return Err(format!("{names} may not be equal"));
            }
        }
        if let Some(marker) = &r.null_marker {
            for (value, name) in [
                (&r.key_separator, "key.separator"),
                (&r.headers_separator, "headers.separator"),
                (&r.headers_delimiter, "headers.delimiter"),
                (&r.headers_key_separator, "headers.key.separator"),
            ] {
                if value == marker {
                    return Err(format!("null.marker and {name} may not be equal"));
                }
            }
        }
        Ok(reader)
    }

    fn is_null(&self, field: &str) -> bool {
        self.null_marker.as_deref() == Some(field)
    }

    /// The text from `start` up to the next `demarcation`, when `enabled`.
    fn parse<'l>(
        &self,
        enabled: bool,
        line: &'l str,
        start: usize,
        demarcation: &str,
        name: &str,
        number: usize,
    ) -> Result<Option<&'l str>, String> {
        if !enabled {
            return Ok(None);
        }
        match line.get(start..).and_then(|rest| rest.find(demarcation)) {
            Some(i) => Ok(line.get(start..start + i)),
            None if self.ignore_error => Ok(None),
            None => Err(format!("No {name} found on line number {number}: '{line}'")),
        }
    }

    /// `LineMessageReader.readRecords` for one line (without its line terminator).
    fn record(&self, line: &str, number: usize) -> Result<ProducedRecord, String> {
        let headers = self.parse(
            self.parse_headers,
            line,
            0,
            &self.headers_delimiter,
            "headers delimiter",
            number,
        )?;
        let header_offset = headers.map_or(0, |h| h.len() + self.headers_delimiter.len());
        let key = self.parse(
            self.parse_key,
            line,
            header_offset,
            &self.key_separator,
            "key separator",
            number,
        )?;
        let key_offset = key.map_or(0, |k| k.len() + self.key_separator.len());
        let value = line.get(header_offset + key_offset..).unwrap_or_default();
        let bytes =
            |field: &str| (!self.is_null(field)).then(|| Bytes::copy_from_slice(field.as_bytes()));
        let mut record = ProducedRecord {
            key: key.and_then(bytes),
            value: bytes(value),
            ..Default::default()
        };
        if let Some(headers) = headers.filter(|h| !self.is_null(h)) {
            record.headers = self.split_headers(headers, number)?;
        }
        Ok(record)
    }

    fn split_headers(
        &self,
        headers: &str,
        number: usize,
    ) -> Result<Vec<(String, Option<Bytes>)>, String> {
        // Java's String.split: trailing empty strings are dropped, but "" is one empty string.
        let mut pairs: Vec<&str> = headers.split(self.headers_separator.as_str()).collect();
        if !headers.is_empty() {
            while pairs.last() == Some(&"") {
                pairs.pop();
            }
        }
        pairs
            .into_iter()
            .map(|pair| match pair.find(self.headers_key_separator.as_str()) {
                None if self.ignore_error => Ok((pair.to_string(), None)),
                None => Err(format!("No header key separator found in pair '{pair}' on line number {number}")),
                Some(i) => {
                    let key = &pair[..i];
                    if self.is_null(key) {
                        return Err(format!(
                            "Header keys should not be equal to the null marker '{}' as they can't be null",
                            self.null_marker.as_deref().unwrap_or_default()
                        ));
                    }
                    let value = &pair[i + self.headers_key_separator.len()..];
                    Ok((key.to_string(), (!self.is_null(value)).then(|| Bytes::copy_from_slice(value.as_bytes()))))
                }
            })
            .collect()
    }
}

/// Kafka's `acks` values.
fn parse_acks(value: &str) -> Result<i16, String> {
    match value.trim() {
        "all" | "-1" => Ok(-1),
        "0" => Ok(0),
        "1" => Ok(1),
        other => Err(format!(
            "Invalid value {other} for configuration acks: String must be one of: all, -1, 0, 1"
        )),
    }
}

fn parse_codec(value: &str) -> Result<Compression, String> {
    let value = if value.is_empty() { "gzip" } else { value };
    Compression::from_name(&value.to_ascii_lowercase())
        .ok_or_else(|| format!("Invalid value {value} for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd"))
}

/// How a record's key or value is described in Kafka's error line.
fn describe(field: &Option<Bytes>) -> String {
    field
        .as_ref()
        .map_or_else(|| "null".to_string(), |b| format!("{} bytes", b.len()))
}

/// The partitions of `topic`, asking the server to create it when Metadata does not know it.
async fn partitions_creating(client: &Client, topic: &str) -> Result<Vec<i32>, String> {
    let mut last = String::new();
    for attempt in 0..METADATA_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
        }
        let response = client
            .metadata_allowing_auto_create(vec![topic.to_string()])
            .await
            .map_err(|e| e.to_string())?;
        let Some(entry) = response
            .topics
            .into_iter()
            .find(|t| t.name.as_deref() == Some(topic))
        else {
            last = "Metadata did not answer for it".to_string();
            continue;
        };
        match ErrorCode::from_code(entry.error_code) {
            Some(ErrorCode::NONE) if !entry.partitions.is_empty() => {
                let mut partitions: Vec<i32> =
                    entry.partitions.iter().map(|p| p.partition_index).collect();
                partitions.sort_unstable();
                return Ok(partitions);
            }
            Some(
                ErrorCode::NONE
                | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                | ErrorCode::LEADER_NOT_AVAILABLE,
            ) => {
                last = ErrorCode::from_code(entry.error_code)
                    .map_or("", ErrorCode::name)
                    .to_string();
            }
            _ => {
                let e = ClientError::Kafka {
                    api: kcoord_wire::api::ApiKey::Metadata.key(),
                    code: entry.error_code,
                    message: None,
                };
                return Err(format!("Topic {topic} cannot be produced to: {e}"));
            }
        }
    }
    Err(format!(
        "Topic {topic} does not exist and the server did not create it ({last} after {METADATA_ATTEMPTS} Metadata requests allowing auto-creation); \
         create the topic first or set auto.create.topics.enable=true on the server"
    ))
}

/// Sends the lines of `input`; `Err` is the line to print before exiting 1.
async fn produce(
    args: &Args,
    reader: &LineReader,
    input: &mut (dyn AsyncBufRead + Unpin),
    prompt: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), String> {
    let (client, producer) = connect(args).await?;
    let topic = args.topic.as_str();
    let mut partitions: Option<Vec<i32>> = None;
    let mut round_robin = 0usize;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        if prompt {
            let _ = write!(out, ">");
            let _ = out.flush();
        }
        if !read_line(input, &mut line).await? {
            return Ok(());
        }
        number += 1;
        let text = String::from_utf8_lossy(&line);
        let record = reader.record(&text, number)?;
        let partitions = match &partitions {
            Some(p) => p,
            None => partitions.insert(partitions_creating(&client, topic).await?),
        };
        let partition = choose_partition(&record, partitions, &mut round_robin);
        if let Err(e) = producer
            .send(topic, partition, std::slice::from_ref(&record))
            .await
        {
            let line =
                format!("Error when sending message to topic {topic} with key: {}, value: {} with error: {e}", describe(&record.key), describe(&record.value));
            if args.sync {
                return Err(line);
            }
            report(err, line);
        }
    }
}

/// The client and the producer the options ask for.
async fn connect(args: &Args) -> Result<(Client, Producer), String> {
    let acks = parse_acks(&args.request_required_acks)?;
    let compression = match &args.compression_codec {
        Some(codec) => parse_codec(codec)?,
        None => Compression::None,
    };
    if args.request_timeout_ms == 0 {
        return Err("Invalid value 0 for configuration request.timeout.ms: Value must be non-negative and non-zero".into());
    }
    let (config, _) = crate::command_config::load(
        "console-producer",
        args.command_config.as_deref(),
        &args.command_property,
    )?;
    let config = config.with_request_timeout(Duration::from_millis(args.request_timeout_ms));
    let client = Client::connect(&args.bootstrap_server, config)
        .await
        .map_err(|e| e.to_string())?;
    let producer_config = ProducerConfig {
        acks,
        compression,
        idempotent: acks == -1,
        retries: args.message_send_max_retries,
        retry_backoff: Duration::from_millis(args.retry_backoff_ms),
        ..ProducerConfig::default()
    };
    let producer = Producer::new(client.clone(), producer_config).map_err(|e| e.to_string())?;
    Ok((client, producer))
}

/// The next line of `input` into `line`, without its end; false at the end of the input.
async fn read_line(
    input: &mut (dyn AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> Result<bool, String> {
    line.clear();
    let read = input
        .read_until(b'\n', line)
        .await
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    if read == 0 {
        return Ok(false);
    }
    // Java's readLine: the line ends at \n, \r\n or \r.
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(true)
}

/// The partition of `record`: by its key's hash, else the next in round-robin order.
fn choose_partition(record: &ProducedRecord, partitions: &[i32], round_robin: &mut usize) -> i32 {
    let count = i32::try_from(partitions.len()).unwrap_or(i32::MAX);
    let index = match &record.key {
        Some(key) => usize::try_from(partition_for_key(key, count)).unwrap_or(0),
        None => {
            *round_robin = round_robin.wrapping_add(1);
            round_robin.wrapping_sub(1) % partitions.len()
        }
    };
    partitions.get(index).copied().unwrap_or(0)
}

/// Runs the tool with `args` (program name first), reading records from `input`, and returns
/// the exit status. `prompt` prints Kafka's `>` before each line (for a terminal).
pub fn run<I, T>(
    args: I,
    input: &mut (dyn AsyncBufRead + Unpin),
    prompt: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Args = match parse_args(args, out, err) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let props = properties(if args.reader_property.is_empty() {
        &args.property
    } else {
        &args.reader_property
    });
    let reader = match LineReader::configure(&props) {
        Ok(reader) => reader,
        Err(message) => {
            report(err, message);
            return 1;
        }
    };
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            report(err, format!("cannot start the async runtime: {e}"));
            return 1;
        }
    };
    let outcome = runtime.block_on(produce(&args, &reader, input, prompt, out, err));
    // Nothing may wait on stdin any more; do not block on it.
    runtime.shutdown_background();
    let _ = out.flush();
    match outcome {
        Ok(()) => 0,
        Err(message) => {
            report(err, message);
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(props: &[&str]) -> Result<LineReader, String> {
        LineReader::configure(&properties(
            &props.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ))
    }

    fn b(s: &str) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn lines_are_read_as_kafkas_line_message_reader_reads_them() {
        let plain = reader(&[]).unwrap();
        assert_eq!(
            plain.record("a\tb", 1).unwrap(),
            ProducedRecord {
                value: b("a\tb"),
                ..Default::default()
            }
        );

        let keyed = reader(&["parse.key=true", "key.separator=:"]).unwrap();
        assert_eq!(
            keyed.record("k:v:w", 1).unwrap(),
            ProducedRecord {
                key: b("k"),
                value: b("v:w"),
                ..Default::default()
            }
        );
        assert_eq!(keyed.record(":v", 1).unwrap().key, b(""));
        assert_eq!(
            keyed.record("novalue", 3).unwrap_err(),
            "No key separator found on line number 3: 'novalue'"
        );

        let lenient = reader(&["parse.key=true", "ignore.error=true"]).unwrap();
        assert_eq!(
            lenient.record("novalue", 1).unwrap(),
            ProducedRecord {
                value: b("novalue"),
                ..Default::default()
            }
        );

        let all = reader(&["parse.key=true", "parse.headers=true", "null.marker=<null>"]).unwrap();
        let r = all.record("h1:v1,h2:<null>,h3:\tkey\t<null>", 1).unwrap();
        assert_eq!(r.key, b("key"));
        assert_eq!(r.value, None);
        assert_eq!(
            r.headers,
            vec![
                ("h1".into(), b("v1")),
                ("h2".into(), None),
                ("h3".into(), b(""))
            ]
        );
        assert_eq!(
            all.record("<null>\t<null>\tv", 1).unwrap(),
            ProducedRecord {
                value: b("v"),
                ..Default::default()
            }
        );
        assert_eq!(
            all.record("bad\tk\tv", 4).unwrap_err(),
            "No header key separator found in pair 'bad' on line number 4"
        );
        assert!(all
            .record("<null>:x\tk\tv", 1)
            .unwrap_err()
            .starts_with("Header keys should not be equal to the null marker '<null>'"));
    }

    #[test]
    fn conflicting_separators_are_refused() {
        assert_eq!(
            reader(&["headers.separator=\t"]).unwrap_err(),
            "headers.delimiter and headers.separator may not be equal"
        );
        assert_eq!(
            reader(&["null.marker=\t"]).unwrap_err(),
            "null.marker and key.separator may not be equal"
        );
        assert!(reader(&["headers.key.separator=,"]).is_err());
    }

    #[test]
    fn acks_and_codecs_are_kafkas() {
        assert_eq!(parse_acks("all"), Ok(-1));
        assert_eq!(parse_acks("-1"), Ok(-1));
        assert_eq!(parse_acks("0"), Ok(0));
        assert!(parse_acks("2")
            .unwrap_err()
            .contains("String must be one of: all, -1, 0, 1"));
        assert_eq!(parse_codec(""), Ok(Compression::Gzip));
        assert_eq!(parse_codec("zstd"), Ok(Compression::Zstd));
        assert!(parse_codec("brotli").is_err());
    }
}
