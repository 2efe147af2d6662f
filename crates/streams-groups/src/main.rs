//! `kafka-streams-groups`: see the `kcoord_streams_groups` library for everything it does.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = kcoord_streams_groups::run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
