//! The `kcoord` daemon: `kcoord <path/to/server.properties>`.
fn main() -> std::process::ExitCode {
    kcoord_server::cli_main()
}
