//! Generates the message and record types from `schemas/*.json` at build time.
use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let schemas = manifest.join("../../schemas");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed={}", schemas.display());
    if let Err(e) = kcoord_codegen::generate_dir(&schemas, &out) {
        panic!("code generation from {} failed: {e}", schemas.display());
    }
}
