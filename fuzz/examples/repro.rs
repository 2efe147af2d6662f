//! Runs one input through a target's body outside libFuzzer (a debug build shows more):
//! `cargo run --manifest-path fuzz/Cargo.toml --example repro -- <target> <file>...`
fn main() {
    let mut args = std::env::args().skip(1);
    let target = args.next().expect("usage: repro <target> <file>...");
    let run: fn(&[u8]) = match target.as_str() {
        "request_decode" => kcoord_fuzz::request_decode,
        "frame_decode" => kcoord_fuzz::frame_decode,
        "config_parse" => kcoord_fuzz::config_parse,
        "metadata_log" => kcoord_fuzz::metadata_log,
        "record_batch" => kcoord_fuzz::record_batch,
        "dispatch" => kcoord_fuzz::dispatch,
        other => panic!("no target {other}"),
    };
    for file in args {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        run(&data);
        println!("{file}: ok");
    }
}
