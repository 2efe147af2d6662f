//! Every relative link in the project's documents resolves: the file exists and, for a
//! `#anchor` into a Markdown file, a heading of that file has that anchor (as GitHub makes
//! them). Links to web addresses are not checked.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The documents checked: the README, everything in `docs/`, and the other top-level guides.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "BENCHMARKS.md",
        "CONTRIBUTING.md",
        "FUZZING.md",
        "config/README.md",
        "schemas/README.md",
        "interop/README.md",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    for dir in ["docs", "crates"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if dir == "docs" && path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if path.join("README.md").is_file() {
                files.push(path.join("README.md"));
            }
        }
    }
    files
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, only letters, digits, spaces, `-` and `_` kept,
/// spaces turned into `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = HashSet::new();
    for line in prose(text).lines() {
        let Some(heading) = line
            .strip_prefix('#')
            .map(|h| h.trim_start_matches('#'))
            .filter(|h| h.starts_with(' '))
        else {
            continue;
        };
        let slug: String = link_texts(heading.trim())
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let repeats = seen.iter().filter(|s| **s == slug).count();
        out.insert(if repeats == 0 {
            slug.clone()
        } else {
            format!("{slug}-{repeats}")
        });
        seen.push(slug);
    }
    out
}

/// A heading's text as rendered: `[text](target)` becomes `text`, backticks and `*` go.
fn link_texts(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            let end = after[close..].find(')')? + close;
            Some((close, end))
        }) {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace(['`', '*'], "")
}

/// The targets of the Markdown links and images in `text` (outside code blocks).
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| c == ')' || c.is_whitespace())
            .unwrap_or(after.len());
        targets.push(after[..end].to_owned());
        rest = &after[end..];
    }
    targets
}

#[test]
fn every_relative_link_in_the_documents_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for doc in documents(root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in link_targets(&text) {
            let is_address = target
                .split_once(':')
                .is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphabetic()));
            if target.is_empty() || is_address {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(path)
            };
            let shown = doc.strip_prefix(root).unwrap().display();
            if !file.exists() {
                broken.push(format!("{shown}: {target}: no such file"));
            } else if !anchor.is_empty() {
                let is_markdown = file.extension().is_some_and(|e| e == "md");
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !is_markdown || !anchors(&text).contains(anchor) {
                    broken.push(format!("{shown}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let text = "# Title\n## Heartbeats per server CPU-second (goal: kcoord >= 10x Kafka) — met\n\
        ## The `--command-config` of [the tools](x.md)\n## Again\n## Again\n```\n# not a heading\n```\n";
    let found = anchors(text);
    for anchor in [
        "title",
        "heartbeats-per-server-cpu-second-goal-kcoord--10x-kafka--met",
        "the---command-config-of-the-tools",
        "again",
        "again-1",
    ] {
        assert!(found.contains(anchor), "{anchor} not in {found:?}");
    }
    assert!(!found.contains("not-a-heading"));
    assert_eq!(
        link_targets("see [a](b.md#c) and ![i](d.png)\n```\n[x](y)\n```\n"),
        vec!["b.md#c", "d.png"]
    );
}
