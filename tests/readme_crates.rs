//! The README's crate table lists every crate of `crates/` with its package name.

use std::path::Path;

#[test]
fn the_readme_lists_every_crate_with_its_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut listed: Vec<(String, String)> = readme
        .lines()
        .filter(|l| l.starts_with("| `crates/"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(|c| c.trim().trim_matches('`')).collect();
            (cells[1].to_owned(), cells[2].to_owned())
        })
        .collect();
    listed.sort();
    let mut crates: Vec<(String, String)> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| {
            let manifest = std::fs::read_to_string(p.join("Cargo.toml")).unwrap();
            let package = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{} has no package name", p.display()))
                .to_owned();
            let dir = p.file_name().unwrap().to_string_lossy();
            (format!("crates/{dir}"), package)
        })
        .collect();
    crates.sort();
    assert_eq!(
        listed, crates,
        "README.md's crate table differs from crates/"
    );
}
