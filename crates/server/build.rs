//! Lists the RPC files of `src/rpc/apis/` for the daemon: every file there is one RPC, declaring
//! `RPC` (`Rpc::new(ApiKey::<Name>, ..)`, which this reads) and defining `serve`. The generated
//! code is the list of declarations and the one `match` on the API key that dispatch runs; the
//! module declarations come from `automod` in `src/rpc/apis/mod.rs`. So adding an RPC is adding
//! its file: nothing else names it.
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new("src/rpc/apis");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut modules: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let module = name.strip_suffix(".rs")?;
            if module == "mod" {
                return None;
            }
            let text = std::fs::read_to_string(entry.path()).ok()?;
            Some((module.to_owned(), declared_api(&text, module)))
        })
        .collect();
    modules.sort();
    let mut out = String::new();
    out.push_str("/// Every RPC's declaration, in file order.\n");
    out.push_str("pub const ALL: &[&crate::rpc::Rpc] = &[\n");
    for (module, _) in &modules {
        let _ = writeln!(out, "    &{module}::RPC,");
    }
    out.push_str("];\n\n");
    out.push_str(
        "/// Runs the RPC of `api`: decodes `body`, calls its handler, encodes its response.\n\
         pub(crate) async fn serve(\n    \
             ctx: &crate::state::RequestContext<'_>,\n    \
             api: kcoord_wire::api::ApiKey,\n    \
             version: i16,\n    \
             body: bytes::Bytes,\n\
         ) -> crate::rpc::dispatch::Reply {\n    \
             match api {\n",
    );
    for (module, api) in &modules {
        let _ = writeln!(
            out,
            "        kcoord_wire::api::ApiKey::{api} => {module}::serve(ctx, api, version, body).await,"
        );
    }
    // Unreachable while every ApiKey has its file; a new schema without one lands here.
    out.push_str("        #[allow(unreachable_patterns)]\n");
    out.push_str("        _ => crate::rpc::dispatch::not_served(ctx, api),\n    }\n}\n");
    out.push_str(
        "\n/// The authorization matrix's rows of every RPC (each file's `authorization_rows`).\n\
         #[cfg(test)]\n\
         pub(crate) fn authorization_rows() -> Vec<crate::rpc::authorize::matrix_tests::rows::Row> {\n    \
             let mut rows = Vec::new();\n",
    );
    for (module, _) in &modules {
        let _ = writeln!(out, "    rows.extend({module}::authorization_rows());");
    }
    out.push_str("    rows\n}\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("apis.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
}

/// The `ApiKey` variant the file's declaration names (`Rpc::new(ApiKey::<Name>, ..)`, however
/// rustfmt wraps it).
fn declared_api(text: &str, module: &str) -> String {
    let name = text
        .find("Rpc::new(")
        .and_then(|at| {
            text[at + "Rpc::new(".len()..]
                .trim_start()
                .strip_prefix("ApiKey::")
        })
        .unwrap_or_else(|| panic!("src/rpc/apis/{module}.rs declares no `Rpc::new(ApiKey::..)`"));
    name.chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}
