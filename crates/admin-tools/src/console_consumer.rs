//! `kafka-console-consumer`, after Apache Kafka's `ConsoleConsumer`, `ConsoleConsumerOptions`
//! and `DefaultMessageFormatter`, without a consumer group: it reads the partitions of the
//! topic (or the one `--partition`) with `kcoord_client::Consumer` and prints each record's
//! value on its own line.
//!
//! ```text
//! kafka-console-consumer --bootstrap-server HOST:PORT --topic TOPIC
//!     [--from-beginning | --partition N [--offset earliest|latest|OFFSET]]
//!     [--max-messages N] [--timeout-ms MS] [--isolation-level read_committed|read_uncommitted]
//!     [--property print.key=true --property print.timestamp=true --property key.separator=,]
//! ```
//!
//! It starts at the end of each partition, at the beginning with `--from-beginning`, or at
//! `--offset` of `--partition`; an offset out of range is reset to the beginning with
//! `--from-beginning` and to the end otherwise (Kafka's `auto.offset.reset`). It stops after
//! `--max-messages` records, or when `--timeout-ms` passes without a record (Kafka's
//! `TimeoutException`: an error line, then exit status 0), or at SIGINT; then it prints
//! `Processed a total of N messages` on stderr, as Kafka does.
//!
//! The formatter properties are Kafka's: `print.timestamp`, `print.key`, `print.offset`,
//! `print.partition`, `print.headers`, `print.value` (default true), `key.separator` (tab),
//! `line.separator` (newline), `headers.separator` (,) and `null.literal` (null);
//! `--formatter-property` is a synonym of `--property` (Kafka 4.2 renamed it).
//!
//! Usage errors print the message on stderr and exit 1, as Kafka's `printUsageAndExit`; a
//! topic that does not exist, or any other failure, prints one line on stderr and exits 1. A
//! closed stdout ends it as Kafka's: `Unable to write to standard out, closing consumer.`,
//! exit 0.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::time::{Duration, Instant};

use clap::Parser;
use kcoord_client::consume::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use kcoord_client::{Client, ClientError, ConsumedRecord, Consumer, FetchOptions, IsolationLevel};
use kcoord_wire::ErrorCode;

use crate::console::{is_true, parse_args, properties, report};

/// The longest a single Fetch waits for records (Kafka's `fetch.max.wait.ms`).
const MAX_WAIT: Duration = Duration::from_millis(500);
/// Kafka's line when nobody reads stdout any more (it then ends normally).
const CLOSED_STDOUT: &str = "Unable to write to standard out, closing consumer.";
/// The pause after a retriable error before fetching again.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Debug, Parser)]
#[command(
    name = "kafka-console-consumer",
    version,
    infer_long_args = true,
    after_help = crate::command_config::HELP,
    about = "This tool helps to read data from Kafka topics and outputs it to standard output."
)]
struct Args {
    /// REQUIRED: The server(s) to connect to.
    #[arg(long, value_name = "server to connect to")]
    bootstrap_server: String,
    /// The topic to consume from.
    #[arg(long, value_name = "topic")]
    topic: String,
    /// The partition to consume from. Consumption starts from the end of the partition unless '--offset' is specified.
    #[arg(long, value_name = "partition")]
    partition: Option<i32>,
    /// The offset to consume from (a non-negative number), or 'earliest' which means from beginning, or 'latest' which means from end.
    #[arg(long, value_name = "consume offset", allow_hyphen_values = true)]
    offset: Option<String>,
    /// Start with the earliest message present in the log rather than the latest message.
    #[arg(long)]
    from_beginning: bool,
    /// The maximum number of messages to consume before exiting. If not set, consumption is continual.
    #[arg(long, value_name = "num_messages")]
    max_messages: Option<i32>,
    /// If specified, exit if no message is available for consumption for the specified interval.
    #[arg(long, value_name = "timeout_ms", allow_hyphen_values = true)]
    timeout_ms: Option<i64>,
    /// Set to read_committed in order to filter out transactional messages which are not committed. Set to read_uncommitted to read all messages.
    #[arg(
        long,
        value_name = "isolation level",
        default_value = "read_uncommitted"
    )]
    isolation_level: String,
    /// The properties to initialize the message formatter: print.timestamp, print.key, print.offset,
    /// print.partition, print.headers, print.value, key.separator, line.separator, headers.separator,
    /// null.literal (key=value).
    #[arg(long, value_name = "prop")]
    property: Vec<String>,
    /// The same as --property.
    #[arg(long, value_name = "prop", conflicts_with = "property")]
    formatter_property: Vec<String>,
    /// Consumer config properties file (client.id, request.timeout.ms, security.protocol with its
    /// sasl.* and ssl.* keys). Note that --command-property takes precedence over this config.
    #[arg(long, value_name = "config file", alias = "consumer.config")]
    command_config: Option<String>,
    /// Consumer config properties in the form key=value.
    #[arg(long, value_name = "config property", alias = "consumer-property")]
    command_property: Vec<String>,
}

/// Where each partition starts (Kafka's `parseOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Earliest,
    Latest,
    At(i64),
}

/// The checked command line.
#[derive(Debug)]
struct Checked {
    args: Args,
    start: Start,
    timeout: Option<Duration>,
    isolation: IsolationLevel,
    formatter: Formatter,
}

/// `ConsoleConsumerOptions.checkRequiredArgs` and `parseOffset`, with Kafka's messages.
fn check(args: Args) -> Result<Checked, String> {
    if args.partition.is_some() {
        if args.from_beginning && args.offset.is_some() {
            return Err("Options from-beginning and offset cannot be specified together.".into());
        }
    } else if args.offset.is_some() {
        return Err("The partition is required when offset is specified.".into());
    }
    let start = match args.offset.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("earliest") => Start::Earliest,
        Some("latest") => Start::Latest,
        Some(other) => match other.parse::<i64>() {
            Ok(offset) if offset >= 0 => Start::At(offset),
            _ => {
                return Err(format!(
                    "The provided offset value '{}' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.",
                    args.offset.as_deref().unwrap_or_default()
                ))
            }
        },
        None if args.from_beginning => Start::Earliest,
        None => Start::Latest,
    };
    let isolation = IsolationLevel::from_name(&args.isolation_level).ok_or_else(|| {
        format!("Invalid value {} for configuration isolation.level: String must be one of: read_committed, read_uncommitted", args.isolation_level)
    })?;
    // Kafka: a negative timeout means none.
    let timeout = args
        .timeout_ms
        .and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_millis);
    let formatter = Formatter::configure(&properties(if args.formatter_property.is_empty() {
        &args.property
    } else {
        &args.formatter_property
    }));
    Ok(Checked {
        args,
        start,
        timeout,
        isolation,
        formatter,
    })
}

/// `DefaultMessageFormatter`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Formatter {
    print_timestamp: bool,
    print_partition: bool,
    print_offset: bool,
    print_headers: bool,
    print_key: bool,
    print_value: bool,
    key_separator: Vec<u8>,
    line_separator: Vec<u8>,
    headers_separator: Vec<u8>,
    null_literal: Vec<u8>,
}

impl Formatter {
    fn configure(props: &HashMap<String, String>) -> Formatter {
        let flag = |key: &str, default: bool| props.get(key).map_or(default, |v| is_true(v));
        let bytes = |key: &str, default: &str| {
            props
                .get(key)
                .map_or_else(|| default.as_bytes().to_vec(), |v| v.as_bytes().to_vec())
        };
        Formatter {
            print_timestamp: flag("print.timestamp", false),
            print_partition: flag("print.partition", false),
            print_offset: flag("print.offset", false),
            print_headers: flag("print.headers", false),
            print_key: flag("print.key", false),
            print_value: flag("print.value", true),
            key_separator: bytes("key.separator", "\t"),
            line_separator: bytes("line.separator", "\n"),
            headers_separator: bytes("headers.separator", ","),
            null_literal: bytes("null.literal", "null"),
        }
    }

    /// `DefaultMessageFormatter.writeTo`: each field printed is followed by the key separator
    /// when another field follows, by the line separator otherwise.
    fn write(
        &self,
        partition: i32,
        record: &ConsumedRecord,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let separator = |out: &mut dyn Write, more: bool| {
            out.write_all(if more {
                &self.key_separator
            } else {
                &self.line_separator
            })
        };
        let field = |value: &Option<bytes::Bytes>| {
            value
                .as_deref()
                .map_or(self.null_literal.clone(), <[u8]>::to_vec)
        };
        if self.print_timestamp {
            write!(out, "{}:{}", record.timestamp_type, record.timestamp)?;
            separator(
                out,
                self.print_partition
                    || self.print_offset
                    || self.print_headers
                    || self.print_key
                    || self.print_value,
            )?;
        }
        if self.print_partition {
            write!(out, "Partition:{partition}")?;
            separator(
                out,
                self.print_offset || self.print_headers || self.print_key || self.print_value,
            )?;
        }
        if self.print_offset {
            write!(out, "Offset:{}", record.offset)?;
            separator(
                out,
                self.print_headers || self.print_key || self.print_value,
            )?;
        }
        if self.print_headers {
            if record.headers.is_empty() {
                write!(out, "NO_HEADERS")?;
            }
            for (i, (key, value)) in record.headers.iter().enumerate() {
                if i > 0 {
                    out.write_all(&self.headers_separator)?;
                }
                write!(out, "{key}:")?;
                out.write_all(&field(value))?;
            }
            separator(out, self.print_key || self.print_value)?;
        }
        if self.print_key {
            out.write_all(&field(&record.key))?;
            separator(out, self.print_value)?;
        }
        if self.print_value {
            out.write_all(&field(&record.value))?;
            out.write_all(&self.line_separator)?;
        }
        Ok(())
    }
}

/// How the consumption ended, besides the records printed.
enum End {
    /// Done: max messages, SIGINT, the timeout or a closed stdout (the line to print first,
    /// if any).
    Done(Option<String>),
    /// Printed on stderr, exit 1.
    Failed(String),
}

/// The offset `start` means for `partition`.
async fn resolve(
    consumer: &Consumer,
    topic: &str,
    partition: i32,
    start: Start,
) -> Result<i64, ClientError> {
    match start {
        Start::At(offset) => Ok(offset),
        Start::Earliest => Ok(consumer
            .list_offsets(topic, partition, EARLIEST_TIMESTAMP)
            .await?
            .0),
        Start::Latest => Ok(consumer
            .list_offsets(topic, partition, LATEST_TIMESTAMP)
            .await?
            .0),
    }
}

async fn consume(
    checked: &Checked,
    count: &mut u64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> End {
    let args = &checked.args;
    let (consumer, positions) = match connect(checked).await {
        Ok(connected) => connected,
        Err(e) => return End::Failed(e),
    };
    let mut session = Session {
        checked,
        consumer,
        positions,
        // Kafka's auto.offset.reset for the console consumer.
        reset: if args.from_beginning {
            Start::Earliest
        } else {
            Start::Latest
        },
        max_messages: args.max_messages.and_then(|n| u64::try_from(n).ok()),
        count,
        idle_since: Instant::now(),
        last_warning: String::new(),
    };
    loop {
        if session.reached_max_messages() {
            return End::Done(None);
        }
        let backoff = match session.fetch_round(out, err).await {
            Ok(backoff) => backoff,
            Err(end) => return end,
        };
        if out.flush().is_err() {
            return End::Done(Some(CLOSED_STDOUT.into()));
        }
        if let Some(end) = session.timed_out() {
            return end;
        }
        if backoff {
            tokio::time::sleep(RETRY_BACKOFF).await;
        }
    }
}

/// A consumer for the topic and the offset each partition starts at.
async fn connect(checked: &Checked) -> Result<(Consumer, Vec<(i32, i64)>), String> {
    let args = &checked.args;
    let topic = args.topic.as_str();
    let (config, _) = crate::command_config::load(
        "console-consumer",
        args.command_config.as_deref(),
        &args.command_property,
    )?;
    let client = Client::connect(&args.bootstrap_server, config)
        .await
        .map_err(|e| e.to_string())?;
    let consumer = Consumer::new(client);
    let partitions = match args.partition {
        Some(p) => vec![p],
        None => consumer
            .partitions(topic)
            .await
            .map_err(|e| e.to_string())?,
    };
    let mut positions = Vec::with_capacity(partitions.len());
    for p in partitions {
        let offset = resolve(&consumer, topic, p, checked.start)
            .await
            .map_err(|e| e.to_string())?;
        positions.push((p, offset));
    }
    Ok((consumer, positions))
}

/// The consumer while it reads: where each partition is, and what ends it.
struct Session<'a> {
    checked: &'a Checked,
    consumer: Consumer,
    positions: Vec<(i32, i64)>,
    /// Where a partition whose offset is out of range starts again.
    reset: Start,
    max_messages: Option<u64>,
    count: &'a mut u64,
    /// Since the last record (or the start), for `--timeout-ms`.
    idle_since: Instant,
    /// The last retriable error reported, so that one repeated is reported once.
    last_warning: String,
}

impl Session<'_> {
    fn reached_max_messages(&self) -> bool {
        self.max_messages.is_some_and(|max| *self.count >= max)
    }

    /// One Fetch of every partition, its records written to `out`. Whether to back off before
    /// the next (a retriable error was reported on `err`); `Err` ends the consumer.
    async fn fetch_round(&mut self, out: &mut dyn Write, err: &mut dyn Write) -> Result<bool, End> {
        let topic = self.checked.args.topic.as_str();
        let wait = self.checked.timeout.map_or(MAX_WAIT, |t| {
            t.saturating_sub(self.idle_since.elapsed()).min(MAX_WAIT)
        });
        let options = FetchOptions {
            max_wait_ms: i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
            isolation_level: self.checked.isolation,
            ..FetchOptions::default()
        };
        let results = match self
            .consumer
            .fetch_partitions(topic, &self.positions, &options)
            .await
        {
            Ok(results) => results,
            Err(e) if e.is_retriable() => {
                self.warn(err, &e);
                return Ok(true);
            }
            Err(e) => return Err(End::Failed(e.to_string())),
        };
        let mut backoff = false;
        for (i, (partition, result)) in results.into_iter().enumerate() {
            match result {
                Ok(fetched) => {
                    self.write_records(partition, &fetched.records, out)?;
                    self.positions[i].1 = fetched.next_offset;
                }
                Err(e) if e.error_code() == Some(ErrorCode::OFFSET_OUT_OF_RANGE) => {
                    match resolve(&self.consumer, topic, partition, self.reset).await {
                        Ok(offset) => self.positions[i].1 = offset,
                        Err(e) if e.is_retriable() => {
                            self.warn(err, &e);
                            backoff = true;
                        }
                        Err(e) => return Err(End::Failed(e.to_string())),
                    }
                }
                Err(e) if e.is_retriable() => {
                    self.warn(err, &e);
                    backoff = true;
                }
                Err(e) => return Err(End::Failed(e.to_string())),
            }
        }
        Ok(backoff)
    }

    /// Writes the records of `partition` up to `--max-messages`; `Err` when stdout is closed.
    fn write_records(
        &mut self,
        partition: i32,
        records: &[ConsumedRecord],
        out: &mut dyn Write,
    ) -> Result<(), End> {
        for record in records {
            if self.reached_max_messages() {
                break;
            }
            if self
                .checked
                .formatter
                .write(partition, record, out)
                .is_err()
            {
                return Err(End::Done(Some(CLOSED_STDOUT.into())));
            }
            *self.count += 1;
            self.idle_since = Instant::now();
        }
        Ok(())
    }

    fn warn(&mut self, err: &mut dyn Write, e: &ClientError) {
        let text = e.to_string();
        if text != self.last_warning {
            report(err, format!("WARN {text} (retrying)"));
            self.last_warning = text;
        }
    }

    /// Kafka's `TimeoutException` once `--timeout-ms` has passed without a record.
    fn timed_out(&self) -> Option<End> {
        let timeout = self.checked.timeout?;
        (self.idle_since.elapsed() >= timeout && !self.reached_max_messages()).then(|| {
            End::Done(Some(format!(
                "Error processing message, terminating consumer process: TimeoutException: no message for {} ms",
                timeout.as_millis()
            )))
        })
    }
}

/// Runs the tool with `args` (program name first) and returns the exit status.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Args = match parse_args(args, out, err) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let checked = match check(args) {
        Ok(checked) => checked,
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
    let mut count = 0u64;
    let (end, interrupted) = runtime.block_on(async {
        tokio::select! {
            end = consume(&checked, &mut count, out, err) => (end, false),
            _ = tokio::signal::ctrl_c() => (End::Done(None), true),
        }
    });
    let _ = out.flush();
    let code = match end {
        End::Done(line) => {
            if let Some(line) = line {
                report(err, line);
            }
            // A JVM ended by SIGINT exits 130 once its shutdown hooks ran.
            if interrupted {
                130
            } else {
                0
            }
        }
        End::Failed(message) => {
            report(err, message);
            1
        }
    };
    report(err, format!("Processed a total of {count} messages"));
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kcoord_record_batches::TimestampType;

    fn args(list: &[&str]) -> Result<Checked, String> {
        let mut all = vec![
            "kafka-console-consumer",
            "--bootstrap-server",
            "h:1",
            "--topic",
            "t",
        ];
        all.extend_from_slice(list);
        check(Args::try_parse_from(all).map_err(|e| e.to_string())?)
    }

    #[test]
    fn kafkas_checks_and_messages() {
        assert_eq!(args(&[]).unwrap().start, Start::Latest);
        assert_eq!(args(&["--from-beginning"]).unwrap().start, Start::Earliest);
        assert_eq!(
            args(&["--partition", "0", "--offset", "EARLIEST"])
                .unwrap()
                .start,
            Start::Earliest
        );
        assert_eq!(
            args(&["--partition", "0", "--offset", "42"]).unwrap().start,
            Start::At(42)
        );
        assert_eq!(
            args(&["--offset", "1"]).unwrap_err(),
            "The partition is required when offset is specified."
        );
        assert_eq!(
            args(&["--partition", "0", "--offset", "1", "--from-beginning"]).unwrap_err(),
            "Options from-beginning and offset cannot be specified together."
        );
        assert_eq!(
            args(&["--partition", "0", "--offset", "-1"]).unwrap_err(),
            "The provided offset value '-1' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."
        );
        assert_eq!(args(&["--timeout-ms", "-5"]).unwrap().timeout, None);
        assert_eq!(
            args(&["--timeout-ms", "250"]).unwrap().timeout,
            Some(Duration::from_millis(250))
        );
        assert!(args(&["--isolation-level", "dirty"])
            .unwrap_err()
            .contains("isolation.level"));
        // Unambiguous prefixes, as joptsimple takes them.
        assert_eq!(args(&["--from-beg"]).unwrap().start, Start::Earliest);
    }

    fn record() -> ConsumedRecord {
        ConsumedRecord {
            offset: 7,
            timestamp: 1234,
            timestamp_type: TimestampType::CreateTime,
            key: None,
            value: Some(Bytes::from_static(b"v")),
            headers: vec![
                ("a".into(), Some(Bytes::from_static(b"1"))),
                ("b".into(), None),
            ],
        }
    }

    fn formatted(props: &[&str]) -> String {
        let f = Formatter::configure(&properties(
            &props.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ));
        let mut out = Vec::new();
        f.write(3, &record(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn records_print_as_kafkas_default_formatter_prints_them() {
        assert_eq!(formatted(&[]), "v\n");
        assert_eq!(formatted(&["print.key=true"]), "null\tv\n");
        assert_eq!(
            formatted(&["print.key=true", "print.timestamp=true", "key.separator=|"]),
            "CreateTime:1234|null|v\n"
        );
        assert_eq!(
            formatted(&[
                "print.partition=true",
                "print.offset=true",
                "print.headers=true",
                "null.literal=-"
            ]),
            "Partition:3\tOffset:7\ta:1,b:-\tv\n"
        );
        assert_eq!(
            formatted(&["print.key=true", "print.value=false"]),
            "null\n"
        );
    }
}
