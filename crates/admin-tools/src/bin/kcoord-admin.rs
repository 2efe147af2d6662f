//! `kcoord-admin`: see `kcoord_admin_tools::admin`.

use std::process::ExitCode;

fn main() -> ExitCode {
    kcoord_admin_tools::init_logging();
    let code = kcoord_admin_tools::admin::run(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
