//! The daemon's rooms import one way: each top-level module of `src/` (a room) uses only the
//! rooms below it in [`ROOMS`], so there is no import cycle between them. Test code is left
//! out (a test may reach across rooms to set things up).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The rooms, lowest first: each may import only those before it. A new top-level module of
/// `src/` must be placed here.
const ROOMS: &[&str] = &[
    "tls", "config", "support", "metrics", "security", "runtime", "gateway", "state", "rpc", "net",
    "http", "daemon",
];

/// The top-level modules `lib.rs` declares.
fn declared_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(source_dir().join("lib.rs")).expect("lib.rs");
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            let name = rest.strip_suffix(';')?;
            (name != "tests").then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn every_module_of_the_daemon_is_a_room_of_the_list() {
    let listed: BTreeSet<String> = ROOMS.iter().map(|r| (*r).to_owned()).collect();
    assert_eq!(declared_modules(), listed);
}

/// The text of a source file without comments and without its `mod tests { .. }` module.
fn production_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rooms `code` names after `crate::` (also inside `use crate::{..}` groups).
fn rooms_used(code: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group
                .split('}')
                .next()
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .collect(),
            None => vec![rest],
        };
        for name in names {
            let ident: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !ident.is_empty() {
                used.insert(ident);
            }
        }
    }
    used
}

/// Every production `.rs` file under `dir`, skipping test files and test directories.
fn production_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.contains("tests") {
                production_files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "testing.rs" {
            out.push(path);
        }
    }
}

#[test]
fn each_room_imports_only_the_rooms_declared_before_it() {
    let rank: BTreeMap<&str, usize> = ROOMS
        .iter()
        .enumerate()
        .map(|(i, room)| (*room, i))
        .collect();
    let mut wrong = Vec::new();
    for room in ROOMS {
        let mut files = Vec::new();
        let dir = source_dir().join(room);
        production_files(&dir, &mut files);
        files.push(source_dir().join(format!("{room}.rs")));
        for file in files.iter().filter(|f| f.exists()) {
            let text = std::fs::read_to_string(file).expect("a source file");
            for used in rooms_used(&production_code(&text)) {
                let Some(&used_rank) = rank.get(used.as_str()) else {
                    continue;
                };
                if used != *room && used_rank > rank[room] {
                    wrong.push(format!("{} (room {room}) uses room {used}", file.display()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "rooms must only import the rooms below them in ROOMS:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_sees_grouped_imports_and_skips_comments_and_tests() {
    let code = production_code(
        "use crate::{config::X, rpc};\n// crate::http\nfn f() {}\n#[cfg(test)]\nmod tests {\n use crate::daemon;\n}\n",
    );
    assert_eq!(
        rooms_used(&code),
        BTreeSet::from(["config".to_owned(), "rpc".to_owned()])
    );
}
