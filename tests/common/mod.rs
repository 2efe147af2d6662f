//! Shared harness for the end-to-end tests (and the load bench): runs the real `kcoord` binary
//! as a child process on free loopback ports, plus small helpers for hand-built Kafka frames.
//!
//! ```ignore
//! mod common;
//! use common::Daemon;
//!
//! let daemon = Daemon::start(&["socket.request.max.bytes=1024"]);
//! let stream = std::net::TcpStream::connect(daemon.broker_addr()).unwrap();
//! // ... talk to it ...
//! daemon.stop(); // SIGTERM, then asserts a clean exit (status 0)
//! ```
//!
//! Every wait here is bounded: on a timeout the harness panics with what it was waiting for
//! and the daemon's stderr. When a test panics while a [`Daemon`] is alive, the daemon's
//! stderr is printed and its temp directory (config file + `stderr.log`) is kept for a look.
#![allow(dead_code)] // each test binary uses its own part of the harness

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long the daemon may take to print its startup line.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the daemon may take to exit after SIGTERM (its own grace period for busy
/// connections is 30 s; an idle daemon exits at once).
pub const STOP_TIMEOUT: Duration = Duration::from_secs(40);
/// Default bound for reading one response in the raw-frame helpers.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The lines every daemon starts with; a test's extra lines replace those with the same key.
pub const BASE_CONFIG: &[&str] = &[
    "node.id=1",
    "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "controller.listener.names=CONTROLLER",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
];

/// The `kcoord` binary Cargo built for this test (or bench) target, or the one the environment
/// variable `KCOORD_BIN` names (to run a bench against another build of the daemon).
pub fn kcoord_binary() -> PathBuf {
    std::env::var_os("KCOORD_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_kcoord")),
        PathBuf::from,
    )
}

/// A running `kcoord` child process. Dropping it kills the process (SIGKILL); use
/// [`Daemon::stop`] to check a graceful shutdown.
pub struct Daemon {
    child: Mutex<Option<Child>>,
    dir: Option<tempfile::TempDir>,
    config_path: PathBuf,
    stderr_path: PathBuf,
    node_id: i32,
    listeners: Vec<(String, SocketAddr)>,
    /// The HTTP listener (`http.listener`), when the startup line names one.
    http: Option<SocketAddr>,
    /// stdout lines after the startup line, kept by a thread that drains the pipe.
    stdout: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// Starts a daemon with [`BASE_CONFIG`] plus `extra` config lines. An extra line whose key
    /// is one of the base keys replaces that base line (so `"node.id=7"` changes the node id
    /// instead of setting it twice). Panics, with the daemon's stderr, if it does not start.
    pub fn start(extra: &[&str]) -> Daemon {
        Daemon::start_with_config(&config_text(extra))
    }

    /// Starts a daemon with exactly this config file content (no base lines).
    pub fn start_with_config(config: &str) -> Daemon {
        match Daemon::try_start_with_config(config) {
            Ok(daemon) => daemon,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Daemon::start_with_config`] that reports a failure instead of panicking, e.g. for
    /// tests that expect a bad config to be refused (see [`run_to_exit`] for those, though).
    pub fn try_start_with_config(config: &str) -> Result<Daemon, String> {
        let dir = tempfile::Builder::new()
            .prefix("kcoord-test-")
            .tempdir()
            .map_err(|e| format!("cannot create a temp dir: {e}"))?;
        let config_path = dir.path().join("server.properties");
        let stderr_path = dir.path().join("stderr.log");
        std::fs::write(&config_path, config)
            .map_err(|e| format!("cannot write {}: {e}", config_path.display()))?;
        let stderr = File::create(&stderr_path)
            .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;

        let mut child = Command::new(kcoord_binary())
            .arg(&config_path)
            // `log.level` in the config decides; a developer's RUST_LOG would override it.
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", kcoord_binary().display()))?;

        // A thread owns stdout for the daemon's whole life, so the pipe never fills up.
        let stdout = child.stdout.take().expect("stdout is piped");
        let (first_line, first_line_rx) = mpsc::channel::<String>();
        let later_lines = Arc::new(Mutex::new(Vec::new()));
        let later = Arc::clone(&later_lines);
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = first_line.send(line);
            }
            drop(first_line); // EOF before a line: the receiver sees the disconnect
            for line in lines.map_while(Result::ok) {
                lock(&later).push(line);
            }
        });

        let mut daemon = Daemon {
            child: Mutex::new(Some(child)),
            dir: Some(dir),
            config_path,
            stderr_path,
            node_id: -1,
            listeners: Vec::new(),
            http: None,
            stdout: later_lines,
        };
        let line = match first_line_rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(daemon.failure(&format!(
                    "kcoord printed no startup line within {STARTUP_TIMEOUT:?}"
                )));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = daemon.wait_for_exit(Duration::from_secs(5));
                return Err(daemon.failure(&format!(
                    "kcoord closed stdout before its startup line (exit: {status:?})"
                )));
            }
        };
        match parse_startup_line(&line).and_then(|parsed| Ok((parsed, parse_http_addr(&line)?))) {
            Ok(((node_id, listeners), http)) => {
                daemon.node_id = node_id;
                daemon.listeners = listeners;
                daemon.http = http;
                Ok(daemon)
            }
            Err(e) => Err(daemon.failure(&format!("bad startup line {line:?}: {e}"))),
        }
    }

    /// A failure message with the daemon's stderr; kills the child.
    fn failure(&self, what: &str) -> String {
        self.kill();
        format!(
            "{what}\n--- kcoord stderr ({}) ---\n{}",
            self.stderr_path.display(),
            self.stderr_log()
        )
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// Listener names and bound addresses, in config order, as the startup line gave them.
    pub fn listeners(&self) -> &[(String, SocketAddr)] {
        &self.listeners
    }

    /// The bound address of the listener with this name (case-insensitive).
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.listeners
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, a)| *a)
    }

    /// The HTTP listener's bound address, when `http.listener` is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http
    }

    /// The value of the unlabelled metric `name` on `/metrics` (needs `http.listener`).
    pub fn metric(&self, name: &str) -> Result<f64, String> {
        let addr = self.http.ok_or("no http.listener")?;
        let mut stream = TcpStream::connect(addr).map_err(|e| format!("GET /metrics: {e}"))?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .map_err(|e| e.to_string())?;
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .map_err(|e| format!("GET /metrics: {e}"))?;
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .map_err(|e| format!("GET /metrics: {e}"))?;
        let prefix = format!("{name} ");
        response
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .ok_or_else(|| format!("no {name} on /metrics"))?
            .trim()
            .parse()
            .map_err(|e| format!("{name}: {e}"))
    }

    /// The `PLAINTEXT` listener (the broker listener of [`BASE_CONFIG`]).
    pub fn broker_addr(&self) -> SocketAddr {
        self.listener_addr("PLAINTEXT")
            .unwrap_or_else(|| panic!("no PLAINTEXT listener in {:?}", self.listeners))
    }

    /// The `CONTROLLER` listener.
    pub fn controller_addr(&self) -> SocketAddr {
        self.listener_addr("CONTROLLER")
            .unwrap_or_else(|| panic!("no CONTROLLER listener in {:?}", self.listeners))
    }

    /// `host:port` of the broker listener, for clients' `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.broker_addr().to_string()
    }

    /// A client connection to the broker listener, with `timeout` for connecting and for each
    /// request; panics if it cannot connect.
    pub async fn client_connection(
        &self,
        client_id: &str,
        timeout: Duration,
    ) -> kcoord_client::Connection {
        let config = kcoord_client::ClientConfig::new(client_id)
            .with_request_timeout(timeout)
            .with_connect_timeout(timeout);
        kcoord_client::Connection::connect(&self.bootstrap(), config)
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.bootstrap()))
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// Everything the daemon wrote to stderr (its logs) so far.
    pub fn stderr_log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.stderr_path) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    /// Waits until the daemon's stderr contains `needle`, up to `timeout`.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> String {
        let log = wait_until(timeout, || {
            let log = self.stderr_log();
            log.contains(needle).then_some(log)
        });
        log.unwrap_or_else(|| {
            panic!(
                "kcoord's stderr did not show {needle:?} within {timeout:?}\n{}",
                self.stderr_log()
            )
        })
    }

    /// Waits until a line of the daemon's stderr satisfies `matches`, up to `timeout`, and
    /// returns that line.
    pub fn wait_for_log_line(
        &self,
        timeout: Duration,
        what: &str,
        matches: impl Fn(&str) -> bool,
    ) -> String {
        let line = wait_until(timeout, || {
            self.stderr_log()
                .lines()
                .find(|l| matches(l))
                .map(str::to_string)
        });
        line.unwrap_or_else(|| {
            panic!(
                "kcoord's stderr showed no line {what} within {timeout:?}\n{}",
                self.stderr_log()
            )
        })
    }

    /// Waits for a WARN line naming `peer` (the client side of a connection), as the daemon
    /// logs for every connection it closes on bad input.
    pub fn wait_for_warn_about(&self, peer: SocketAddr) -> String {
        let needle = format!("peer={peer}");
        self.wait_for_log_line(IO_TIMEOUT, &format!("at WARN with {needle}"), |l| {
            l.contains(" WARN ") && l.contains(&needle)
        })
    }

    /// stdout lines printed after the startup line.
    pub fn stdout_lines(&self) -> Vec<String> {
        lock(&self.stdout).clone()
    }

    pub fn pid(&self) -> Option<u32> {
        lock(&self.child).as_ref().map(Child::id)
    }

    /// True while the process has not exited.
    pub fn is_alive(&self) -> bool {
        match lock(&self.child).as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Panics, with stderr, if the daemon has exited.
    pub fn assert_alive(&self) {
        if !self.is_alive() {
            panic!(
                "kcoord is not running any more\n--- kcoord stderr ---\n{}",
                self.stderr_log()
            );
        }
    }

    /// Sends a signal by name (`TERM`, `INT`, ...) with `kill(1)`.
    pub fn signal(&self, name: &str) {
        let Some(pid) = self.pid() else {
            panic!("kcoord already reaped")
        };
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(status.success(), "kill -{name} {pid} failed: {status}");
    }

    /// Polls for the exit status for up to `timeout`; `None` if still running.
    pub fn wait_for_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        wait_until(timeout, || match lock(&self.child).as_mut() {
            Some(child) => child.try_wait().ok().flatten(),
            None => None,
        })
    }

    /// SIGTERM, then the exit status (panics if it does not exit within [`STOP_TIMEOUT`]).
    pub fn terminate(&self) -> ExitStatus {
        self.signal("TERM");
        match self.wait_for_exit(STOP_TIMEOUT) {
            Some(status) => status,
            None => panic!(
                "kcoord did not exit within {STOP_TIMEOUT:?} of SIGTERM\n--- kcoord stderr ---\n{}",
                self.stderr_log()
            ),
        }
    }

    /// Graceful stop: SIGTERM and assert exit status 0. Returns the daemon's stderr.
    pub fn stop(self) -> String {
        let status = self.terminate();
        let log = self.stderr_log();
        assert!(
            status.success(),
            "kcoord exited with {status} after SIGTERM\n--- kcoord stderr ---\n{log}"
        );
        log
    }

    /// SIGKILL and reap, if still running.
    pub fn kill(&self) {
        if let Some(child) = lock(&self.child).as_mut() {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let dir = self.dir.take().map(tempfile::TempDir::keep);
            eprintln!(
                "--- kcoord stderr (kept in {}) ---\n{}",
                dir.as_deref()
                    .map_or_else(|| "?".into(), |d| d.display().to_string()),
                self.stderr_log()
            );
        }
    }
}

/// `BASE_CONFIG` with `extra` appended; an extra key replaces the base line of that key.
pub fn config_text(extra: &[&str]) -> String {
    let overridden: Vec<&str> = extra.iter().filter_map(|line| config_key(line)).collect();
    let mut text = String::new();
    for line in BASE_CONFIG
        .iter()
        .filter(|line| !config_key(line).is_some_and(|k| overridden.contains(&k)))
    {
        text.push_str(line);
        text.push('\n');
    }
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The key of a simple `key=value` / `key: value` line (no escapes); `None` for comments.
fn config_key(line: &str) -> Option<&str> {
    let line = line.trim_start();
    if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
        return None;
    }
    let end = line.find(['=', ':', ' ', '\t']).unwrap_or(line.len());
    Some(&line[..end])
}

/// Parses `kcoord started: node.id=1 listeners=PLAINTEXT://127.0.0.1:1234,CONTROLLER://...`
/// (and an optional ` http=127.0.0.1:8080` after it, see [`parse_http_addr`]).
pub fn parse_startup_line(line: &str) -> Result<(i32, Vec<(String, SocketAddr)>), String> {
    let rest = line
        .strip_prefix("kcoord started: ")
        .ok_or("missing `kcoord started: ` prefix")?;
    let (node, rest) = rest.split_once(' ').ok_or("missing listeners")?;
    let listeners = rest.split(' ').next().unwrap_or_default();
    let node_id = node
        .strip_prefix("node.id=")
        .and_then(|id| id.parse().ok())
        .ok_or("bad node.id")?;
    let listeners = listeners
        .strip_prefix("listeners=")
        .ok_or("missing `listeners=`")?;
    let listeners = listeners
        .split(',')
        .map(|l| {
            let (name, addr) = l
                .split_once("://")
                .ok_or_else(|| format!("bad listener {l:?}"))?;
            let addr: SocketAddr = addr
                .parse()
                .map_err(|e| format!("bad address in {l:?}: {e}"))?;
            Ok((name.to_string(), addr))
        })
        .collect::<Result<Vec<_>, String>>()?;
    if listeners.is_empty() {
        return Err("no listeners".into());
    }
    Ok((node_id, listeners))
}

/// The HTTP listener's address on the startup line (` http=host:port`), if it has one.
pub fn parse_http_addr(line: &str) -> Result<Option<SocketAddr>, String> {
    line.split(' ')
        .find_map(|field| field.strip_prefix("http="))
        .map(|addr| {
            addr.parse()
                .map_err(|e| format!("bad http address {addr:?}: {e}"))
        })
        .transpose()
}

/// Runs `kcoord` with these arguments to completion (bounded by `timeout`): for tests of
/// `--help`, `--version` and config errors. Returns (status, stdout, stderr).
pub fn run_to_exit(args: &[&str], timeout: Duration) -> (ExitStatus, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let mut child = Command::new(kcoord_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run kcoord");
    let status = wait_until(timeout, || child.try_wait().ok().flatten());
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("kcoord {args:?} did not exit within {timeout:?}");
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (status, read(&out_path), read(&err_path))
}

/// Calls `probe` until it returns `Some`, for at most `timeout`, backing off from 1 ms to 50 ms
/// between tries. One last try is made at the deadline.
pub fn wait_until<T>(timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// Hand-built frames over blocking sockets.

/// A blocking connection with read/write timeouts of [`IO_TIMEOUT`] and TCP_NODELAY.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// A loopback address (127.0.1.0 and up) no earlier call in this process returned. The daemon
/// counts connections and rate-limits its log lines per peer address, so a case that needs a
/// peer of its own (its own WARN line, its own `max.connections.per.ip` count) connects from
/// one of these with [`connect_from`].
pub fn fresh_loopback_ip() -> std::net::IpAddr {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    assert!(n < 1 << 16, "out of loopback addresses");
    std::net::Ipv4Addr::new(127, 0, 1 + (n >> 8) as u8, n as u8).into()
}

/// [`connect`] from `source` (an address of this machine, e.g. [`fresh_loopback_ip`]).
pub fn connect_from(addr: SocketAddr, source: std::net::IpAddr) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime to connect with");
    let stream = runtime
        .block_on(async {
            let socket = match source {
                std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            socket.bind(SocketAddr::new(source, 0))?;
            let stream = tokio::time::timeout(IO_TIMEOUT, socket.connect(addr))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            let stream = stream.into_std()?;
            stream.set_nonblocking(false)?;
            Ok::<_, std::io::Error>(stream)
        })
        .unwrap_or_else(|e| panic!("connect to {addr} from {source}: {e}"));
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .expect("write timeout");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// `payload` behind its 4-byte big-endian size prefix.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// Request header v1 (api key, version, correlation id, nullable client id); v2 adds the
/// tagged-field count, which [`request_header_v2`] writes.
pub fn request_header_v1(
    api_key: i16,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&api_key.to_be_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&correlation_id.to_be_bytes());
    out.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    out.extend_from_slice(client_id.as_bytes());
    out
}

/// Request header v2: header v1 plus an empty tagged-field section.
pub fn request_header_v2(
    api_key: i16,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Vec<u8> {
    let mut out = request_header_v1(api_key, version, correlation_id, client_id);
    out.push(0);
    out
}

/// A compact string (unsigned varint length + 1, then the bytes); short strings only.
pub fn compact_string(s: &str) -> Vec<u8> {
    assert!(
        s.len() < 127,
        "compact_string helper handles one-byte lengths only"
    );
    let mut out = vec![(s.len() + 1) as u8];
    out.extend_from_slice(s.as_bytes());
    out
}

/// A complete ApiVersions v3 request frame (header v2; software name and version; no tags).
pub fn api_versions_v3_frame(correlation_id: i32) -> Vec<u8> {
    let mut payload = request_header_v2(18, 3, correlation_id, "kcoord-e2e");
    payload.extend(compact_string("kcoord-e2e"));
    payload.extend(compact_string("1.0"));
    payload.push(0); // tagged fields
    frame(&payload)
}

/// What happened when reading one frame.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A complete frame (payload only).
    Frame(Vec<u8>),
    /// The server closed the connection (EOF or reset) before a complete frame; carries the
    /// bytes of a partial frame, if any.
    Closed(Vec<u8>),
}

/// Reads one response frame, or notices the connection was closed. Panics on a timeout:
/// the server must either answer or close within [`IO_TIMEOUT`].
pub fn read_frame(stream: &mut TcpStream) -> ReadOutcome {
    let mut prefix = [0u8; 4];
    if let Err(partial) = read_exact_or_closed(stream, &mut prefix) {
        return ReadOutcome::Closed(partial);
    }
    let size = i32::from_be_bytes(prefix);
    assert!(
        (0..=100 * 1024 * 1024).contains(&size),
        "response size prefix {size} is absurd"
    );
    let mut payload = vec![0u8; size as usize];
    if let Err(partial) = read_exact_or_closed(stream, &mut payload) {
        let mut bytes = prefix.to_vec();
        bytes.extend(partial);
        return ReadOutcome::Closed(bytes);
    }
    ReadOutcome::Frame(payload)
}

/// Fills `buf`; `Err(bytes read)` on EOF or a reset. Panics on a timeout.
fn read_exact_or_closed(stream: &mut TcpStream, buf: &mut [u8]) -> Result<(), Vec<u8>> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(buf[..filled].to_vec()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("no response and no close within {IO_TIMEOUT:?} ({filled} bytes read)")
            }
            Err(_) => return Err(buf[..filled].to_vec()), // reset by peer: closed
        }
    }
    Ok(())
}

/// Asserts the server closes the connection without sending anything more.
pub fn expect_closed(stream: &mut TcpStream, what: &str) {
    match read_frame(stream) {
        ReadOutcome::Closed(partial) if partial.is_empty() => {}
        ReadOutcome::Closed(partial) => panic!(
            "{what}: the server sent {} stray bytes before closing",
            partial.len()
        ),
        ReadOutcome::Frame(f) => panic!(
            "{what}: expected the connection to be closed, got a {}-byte response: {f:02x?}",
            f.len()
        ),
    }
}

/// Reads one frame and panics if the connection was closed instead.
pub fn expect_frame(stream: &mut TcpStream, what: &str) -> Vec<u8> {
    match read_frame(stream) {
        ReadOutcome::Frame(f) => f,
        ReadOutcome::Closed(partial) => panic!(
            "{what}: the server closed the connection ({} bytes of a partial frame)",
            partial.len()
        ),
    }
}

/// Writes `bytes`; a write error (the server may already have closed) is returned, not fatal.
pub fn send(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}

/// Checks that a fresh connection to `addr` is served: an ApiVersions v3 request gets a
/// well-formed, error-free answer with the right correlation id that lists ApiVersions.
pub fn assert_served(addr: SocketAddr) {
    let mut stream = connect(addr);
    send(&mut stream, &api_versions_v3_frame(4242)).expect("send ApiVersions");
    let response = expect_frame(&mut stream, "ApiVersions v3 on a fresh connection");
    let versions = parse_api_versions_response(&response, 3).unwrap_or_else(|e| {
        panic!("ApiVersions v3 response does not parse ({e}): {response:02x?}")
    });
    assert_eq!(versions.correlation_id, 4242, "correlation id");
    assert_eq!(versions.error_code, 0, "error code");
    assert!(
        versions.apis.iter().any(|&(key, _, _)| key == 18),
        "ApiVersions is not listed: {:?}",
        versions.apis
    );
}

/// An ApiVersions response, parsed by hand (independently of the codecs under test).
#[derive(Debug, PartialEq, Eq)]
pub struct ApiVersionsAnswer {
    pub correlation_id: i32,
    pub error_code: i16,
    /// (api key, min, max)
    pub apis: Vec<(i16, i16, i16)>,
}

/// Parses an ApiVersions response frame (header v0, always) at body `version` 0..=4: the
/// correlation id, error code and api list; the rest of the body is checked only for v0.
pub fn parse_api_versions_response(
    frame: &[u8],
    version: i16,
) -> Result<ApiVersionsAnswer, String> {
    let mut r = Reader(frame);
    let correlation_id = r.i32()?;
    let error_code = r.i16()?;
    let flexible = version >= 3;
    let count = if flexible {
        r.uvarint()? as i64 - 1
    } else {
        i64::from(r.i32()?)
    };
    if !(0..=1000).contains(&count) {
        return Err(format!("api count {count}"));
    }
    let mut apis = Vec::new();
    for _ in 0..count {
        apis.push((r.i16()?, r.i16()?, r.i16()?));
        if flexible {
            r.skip_tagged_fields()?;
        }
    }
    if version == 0 && !r.0.is_empty() {
        return Err(format!("{} bytes after a v0 body", r.0.len()));
    }
    Ok(ApiVersionsAnswer {
        correlation_id,
        error_code,
        apis,
    })
}

/// A bounds-checked big-endian reader.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err(format!("need {n} bytes, have {}", self.0.len()));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    pub fn i16(&mut self) -> Result<i16, String> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }
    pub fn i32(&mut self) -> Result<i32, String> {
        self.take(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn uvarint(&mut self) -> Result<u32, String> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.take(1)?[0];
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long".into())
    }
    pub fn skip_tagged_fields(&mut self) -> Result<(), String> {
        for _ in 0..self.uvarint()? {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}
