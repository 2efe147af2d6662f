//! The running application on the web page (issue 26): with a 200-node topology, 500 tasks and
//! 20 instances, how long selecting an instance takes to highlight what it runs in headless
//! Chromium, and how long the JSON API takes to answer `.../tasks`, `.../lag` and
//! `.../timeline`. One JSON line.
//!
//! ```text
//! cargo bench --bench web_running                       # 10 x 20 nodes, 50 partitions, 20 members
//! cargo bench --bench web_running -- --reps 50
//! ```
//!
//! Setup: the `kcoord` binary Cargo built alongside the bench with an HTTP listener and the
//! `memory` plugin; kcoord-streams-demo runs 20 members of one application whose description
//! (`kcoord_topology::synthetic::layered(10, 20, 0)`) has 10 sub-topologies of 20 nodes chained
//! through repartition topics, its source topic of 50 partitions (so 500 tasks); the source's
//! partition 0 has records and a committed offset behind them (lag). Debian's Chromium,
//! headless, 1600x1000.
//!
//! Measured, `--reps` (20) times each: in the page, from a click on an instance's button to
//! the highlighted rows and nodes laid out (the click handler is synchronous; the time includes
//! the forced style and layout of the highlight), alternating between two instances; and over
//! HTTP, each of the three endpoints (median and maximum per endpoint).
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs with 1 rep and exits with
//! status 1 if a selection highlights nothing.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/web_support/mod.rs"]
mod web_support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;
use web_support::{chromium, evaluate, wait_in_page, writer_json, Http, Sim, WEB_CONFIG};

const GROUP: &str = "bench-running-app";
const MEMBERS: usize = 20;
const PARTITIONS: usize = 50;

fn reps() -> Result<usize, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        return Ok(1);
    }
    match args.iter().position(|a| a == "--reps") {
        None => Ok(20),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| "--reps needs a number of at least 1".to_owned()),
    }
}

fn median_and_max(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (times[(times.len() - 1) / 2], times[times.len() - 1])
}

/// Milliseconds from clicking `member`'s button to its highlight laid out, and how many task
/// rows are highlighted then.
fn select(tab: &headless_chrome::Tab, member: &str) -> (f64, u64) {
    let section = format!("section[data-group=\"{GROUP}\"]");
    let timed = evaluate(
        tab,
        &format!(
            "(() => {{ const b = document.querySelector('{section} button.instance[data-member=\"{member}\"]'); \
             const t0 = performance.now(); b.click(); document.body.offsetHeight; \
             const ms = performance.now() - t0; \
             return [ms, document.querySelectorAll('{section} tr.task.instance-selected').length]; }})()"
        ),
    );
    (
        timed[0].as_f64().unwrap_or(f64::NAN),
        timed[1].as_u64().unwrap_or(0),
    )
}

/// Each endpoint's median and maximum answer time over `reps` requests.
fn api_times(http: &Http, reps: usize) -> Result<Vec<(String, f64, f64)>, String> {
    ["tasks", "lag", "timeline"]
        .into_iter()
        .map(|endpoint| {
            let path = format!("/api/v1/groups/{GROUP}/{endpoint}");
            let mut times = Vec::with_capacity(reps);
            for _ in 0..reps {
                let started = Instant::now();
                let answer = http.get(&path);
                times.push(started.elapsed().as_secs_f64() * 1e3);
                if answer.status != 200 {
                    return Err(format!("{path}: {} {}", answer.status, answer.body));
                }
            }
            let (median, max) = median_and_max(times);
            Ok((endpoint.to_owned(), median, max))
        })
        .collect()
}

fn run(reps: usize) -> Result<String, String> {
    let browser = chromium();
    let daemon = common::Daemon::start(WEB_CONFIG);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let description = kcoord_client::topology::synthetic::layered(10, 20, 0);
    let description = writer_json(&description);
    let source = description["subtopologies"][0]["nodes"][0]["topics"][0]
        .as_str()
        .ok_or("the synthetic topology has no source topic")?
        .to_owned();
    web_support::consumers::lagging_source(&daemon, &source, PARTITIONS as i32, 100, GROUP, 10);
    let (members, partitions) = (MEMBERS.to_string(), PARTITIONS.to_string());
    let app = Sim::start(
        &daemon.bootstrap(),
        GROUP,
        &description,
        &["--members", &members, "--partitions", &partitions],
    );
    let tasks_path = format!("/api/v1/groups/{GROUP}/tasks");
    let settled = |doc: &Value| {
        let instances = doc["instances"].as_array().cloned().unwrap_or_default();
        let running: u64 = instances
            .iter()
            .filter_map(|i| i["activeTasks"].as_u64())
            .sum();
        instances.len() == MEMBERS && running == 10 * PARTITIONS as u64
    };
    let tasks = http.wait_for(&tasks_path, settled);
    let picked: Vec<String> = tasks["instances"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .take(2)
        .filter_map(|i| i["memberId"].as_str().map(str::to_owned))
        .collect();

    let tab = browser.new_tab().map_err(|e| format!("new tab: {e}"))?;
    tab.navigate_to(&http.url("/"))
        .and_then(|t| t.wait_until_navigated())
        .map_err(|e| format!("navigate: {e}"))?;
    let rows =
        format!("document.querySelectorAll('section[data-group=\"{GROUP}\"] tr.task').length");
    wait_in_page(&tab, &rows, "the 500 tasks", |n| {
        n.as_u64() == Some(10 * PARTITIONS as u64)
    });
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps {
        let (ms, highlighted) = select(&tab, &picked[rep % picked.len()]);
        if highlighted == 0 {
            return Err(format!("rep {rep}: the selection highlighted no task"));
        }
        times.push(ms);
        // The page polls every 3 s; a selection right after a redraw is what an operator gets.
        std::thread::sleep(Duration::from_millis(50));
    }
    let api = api_times(&http, reps)?;
    let lag = http.get(&format!("/api/v1/groups/{GROUP}/lag")).json();
    let lag_partitions = lag["partitions"].as_array().map_or(0, Vec::len);
    if lag_partitions != 10 * PARTITIONS {
        return Err(format!(
            "{lag_partitions} source partitions in the lag, not {}",
            10 * PARTITIONS
        ));
    }
    drop(tab);
    app.stop();
    daemon.stop();

    let (p50, max) = median_and_max(times);
    let api: Vec<String> = api
        .iter()
        .map(|(e, median, max)| format!(r#""{e}_p50_ms":{median:.1},"{e}_max_ms":{max:.1}"#))
        .collect();
    Ok(format!(
        r#"{{"bench":"web_running","nodes":200,"tasks":{},"lag_partitions":{lag_partitions},"instances":{MEMBERS},"reps":{reps},"select_p50_ms":{p50:.1},"select_max_ms":{max:.1},{}}}"#,
        10 * PARTITIONS,
        api.join(",")
    ))
}

fn main() -> ExitCode {
    let reps = match reps() {
        Ok(reps) => reps,
        Err(e) => {
            eprintln!("web_running: {e}");
            return ExitCode::from(2);
        }
    };
    match run(reps) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("web_running: {e}");
            ExitCode::FAILURE
        }
    }
}
