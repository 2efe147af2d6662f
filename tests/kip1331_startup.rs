//! Selecting the topology description plugin at startup (KIP-1331), through the `kcoord`
//! binary: an unknown plugin name or settings its plugin rejects stop the start with exit
//! status 2 and one line naming the key.

use std::process::Command;

/// Runs `kcoord` on a config file holding `text`; returns (exit code, stderr).
fn run(name: &str, text: &str) -> (Option<i32>, String) {
    let path = std::env::temp_dir().join(format!(
        "kcoord-kip1331-{}-{name}.properties",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("write the config");
    let out = Command::new(env!("CARGO_BIN_EXE_kcoord"))
        .arg(&path)
        .output()
        .expect("run kcoord");
    let _ = std::fs::remove_file(&path);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const BASE: &str =
    "node.id=1\nlisteners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\nlog.level=info\n";

#[test]
fn an_unknown_plugin_exits_2_naming_the_key_and_the_known_plugins() {
    let (code, stderr) = run(
        "unknown",
        &format!("{BASE}group.streams.topology.description.class=nope\n"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains(":4: group.streams.topology.description.class: unknown topology description plugin \"nope\""), "{stderr}");
    assert!(lines[0].contains("known plugins: memory"), "{stderr}");
}

#[test]
fn settings_the_plugin_rejects_exit_2_naming_the_key() {
    let (code, stderr) = run(
        "bad-setting",
        &format!("{BASE}group.streams.topology.description.plugin.class=memory\ngroup.streams.topology.description.memory.max.bytes=lots\n"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("error: group.streams.topology.description.plugin.class: plugin memory rejected its configuration"), "{stderr}");
    assert!(lines[0].contains("max.bytes"), "{stderr}");
}
