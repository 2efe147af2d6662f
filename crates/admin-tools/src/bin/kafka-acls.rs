//! `kafka-acls`: see `kcoord_admin_tools::acls`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = kcoord_admin_tools::acls::run(
        std::env::args().skip(1),
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
