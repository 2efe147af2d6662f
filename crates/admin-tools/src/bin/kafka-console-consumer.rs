//! `kafka-console-consumer`: see `kcoord_admin_tools::console_consumer`.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    kcoord_admin_tools::init_logging();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let code = kcoord_admin_tools::console_consumer::run(
        std::env::args_os(),
        &mut out,
        &mut std::io::stderr(),
    );
    let _ = out.flush();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
