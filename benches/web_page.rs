//! The web page (issue 15): how long a 200-node topology takes to show in headless Chromium,
//! from navigation to every node drawn. One JSON line.
//!
//! ```text
//! cargo bench --bench web_page                          # 10 sub-topologies x 20 nodes, 20 reps
//! cargo bench --bench web_page -- --subtopologies 10 --nodes 20 --reps 20 --warmup 2
//! cargo bench --bench web_page -- --screenshot /tmp/page.png   # and a picture of the last load
//! ```
//!
//! Setup: the `kcoord` binary Cargo built alongside the bench (for `cargo bench`: the
//! optimized one) with an HTTP listener and the `memory` plugin; kcoord-streams-demo runs one
//! application whose description (`kcoord_topology::synthetic::layered`) has `--subtopologies`
//! sub-topologies of `--nodes` nodes each, chained through repartition topics (a source,
//! processors with stores, diamonds, a sink); it pushes it when the coordinator asks. Debian's
//! Chromium (`scripts/install-chromium`), headless, 1600x1000, over CDP (`headless_chrome`).
//!
//! Measured, `--warmup` (2) untimed then `--reps` (20) times: a fresh load of the page (`/?rep=N`)
//! until the page marks the group's drawing as shown (`performance.mark("kcoord:drawn:<group>")`,
//! set two animation frames after the SVG was inserted, so after the frame that shows it was
//! rendered). The mark's `startTime` is milliseconds since the navigation started
//! (`performance.timeOrigin`), so the browser measures it, not the polling of this bench. Each
//! rep then checks that every source, processor and sink is in the DOM. That time covers the
//! page's API reads (the groups, the topology JSON, the SVG). The daemon lays a description out
//! once and keeps the drawing, so `first_load_ms` (the first load, a warm-up unless
//! `--warmup 0`, whose SVG request laid the topology out) is reported apart from the timed
//! loads, which get the kept drawing.
//! Also reported: the daemon's time to answer `topology.svg` (kept) over HTTP, median of
//! `--reps` requests.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it runs once with 1 rep and no
//! warm-up, and exits with status 1 if the page does not draw every node.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../tests/web_support/mod.rs"]
mod web_support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use web_support::{chromium, evaluate, writer_json, Http, Sim, WAIT, WEB_CONFIG};

const GROUP: &str = "bench-web-app";

struct Settings {
    subtopologies: usize,
    nodes: usize,
    reps: usize,
    warmup: usize,
    /// `--screenshot`: a PNG of the page after the last load (with the drawing's box scrolled
    /// as loaded), to see whether 200 nodes stay readable.
    screenshot: Option<String>,
}

fn settings() -> Result<Settings, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mut s = Settings {
        subtopologies: 10,
        nodes: 20,
        reps: if bench { 20 } else { 1 },
        warmup: if bench { 2 } else { 0 },
        screenshot: None,
    };
    let mut i = 0;
    while i < args.len() {
        let name = args[i].as_str();
        let value = args.get(i + 1).map(String::as_str);
        let number = |min: usize| -> Result<usize, String> {
            value
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|v| *v >= min)
                .ok_or_else(|| format!("{name} needs a number of at least {min}"))
        };
        match name {
            "--subtopologies" => s.subtopologies = number(1)?,
            "--nodes" => s.nodes = number(3)?,
            "--reps" => s.reps = number(1)?,
            "--warmup" => s.warmup = number(0)?,
            "--screenshot" => {
                s.screenshot = Some(value.ok_or("--screenshot needs a path")?.to_owned());
            }
            // libtest's and cargo's own arguments.
            _ => {
                if bench && name != "--bench" {
                    return Err(format!(
                        "unknown argument {name:?} (--subtopologies, --nodes, --reps, --warmup, --screenshot)"
                    ));
                }
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    Ok(s)
}

/// One load of the page: milliseconds from navigation to the drawing shown, and how many
/// sources, processors and sinks it has then.
fn load_page(tab: &headless_chrome::Tab, url: &str) -> Result<(f64, u64), String> {
    tab.navigate_to(url)
        .and_then(|t| t.wait_until_navigated())
        .map_err(|e| format!("navigate to {url}: {e}"))?;
    let mark =
        format!("performance.getEntriesByName('kcoord:drawn:{GROUP}')[0]?.startTime ?? null");
    let deadline = Instant::now() + WAIT;
    let drawn_ms = loop {
        if let Some(ms) = evaluate(tab, &mark).as_f64() {
            break ms;
        }
        if Instant::now() > deadline {
            return Err(format!("{url}: the drawing was not shown within {WAIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let nodes = evaluate(
        tab,
        &format!(
            "document.querySelectorAll('section[data-group=\"{GROUP}\"] .drawing g.node:is([data-kind=source],[data-kind=processor],[data-kind=sink])').length"
        ),
    );
    Ok((drawn_ms, nodes.as_u64().unwrap_or(0)))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn run(s: &Settings) -> Result<String, String> {
    let browser = chromium();
    let daemon = common::Daemon::start(WEB_CONFIG);
    let http = Http::new(daemon.http_addr().expect("an HTTP listener"));
    let description = kcoord_client::topology::synthetic::layered(s.subtopologies, s.nodes, 0);
    let app = Sim::start(&daemon.bootstrap(), GROUP, &writer_json(&description), &[]);
    let topology = http.wait_for_topology(GROUP);
    let expected = web_support::node_names(&topology["topologyDescription"]).len() as u64;

    let tab = browser.new_tab().map_err(|e| format!("new tab: {e}"))?;
    let mut first_load_ms = 0.0;
    let mut times = Vec::with_capacity(s.reps);
    for rep in 0..s.warmup + s.reps {
        let (ms, nodes) = load_page(&tab, &http.url(&format!("/?rep={rep}")))?;
        if nodes != expected {
            return Err(format!("rep {rep}: {nodes} of {expected} nodes drawn"));
        }
        if rep == 0 {
            first_load_ms = ms;
        }
        if rep >= s.warmup {
            times.push(ms);
        }
    }
    if let Some(path) = &s.screenshot {
        let png = tab
            .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
            .map_err(|e| format!("screenshot: {e}"))?;
        std::fs::write(path, png).map_err(|e| format!("{path}: {e}"))?;
    }
    let svg_path = format!("/api/v1/groups/{GROUP}/topology.svg");
    let svg = http.get(&svg_path);
    if svg.status != 200 {
        return Err(format!("{svg_path}: {} {}", svg.status, svg.body));
    }
    let elements = svg.body.matches("<g class=\"node\"").count();
    let mut svg_times: Vec<f64> = (0..s.reps)
        .map(|_| {
            let started = Instant::now();
            let answer = http.get(&svg_path);
            assert_eq!(answer.status, 200);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    drop(tab);
    app.stop();
    daemon.stop();

    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    svg_times.sort_by(f64::total_cmp);
    let shown: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    Ok(format!(
        r#"{{"bench":"web_page","subtopologies":{},"nodes_per_subtopology":{},"nodes":{expected},"drawn_elements":{elements},"svg_bytes":{},"first_load_ms":{first_load_ms:.1},"reps":{},"p50_ms":{:.1},"min_ms":{:.1},"max_ms":{:.1},"svg_get_p50_ms":{:.1},"times_ms":[{}]}}"#,
        s.subtopologies,
        s.nodes,
        svg.body.len(),
        times.len(),
        percentile(&sorted, 0.5),
        sorted[0],
        sorted[sorted.len() - 1],
        percentile(&svg_times, 0.5),
        shown.join(","),
    ))
}

fn main() -> ExitCode {
    let s = match settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("web_page: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&s) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("web_page: {e}");
            ExitCode::FAILURE
        }
    }
}
