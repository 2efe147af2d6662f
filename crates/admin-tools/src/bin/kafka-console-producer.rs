//! `kafka-console-producer`: see `kcoord_admin_tools::console_producer`.

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    kcoord_admin_tools::init_logging();
    // Kafka prompts with `>` when it runs on a console.
    let prompt = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let code = kcoord_admin_tools::console_producer::run(
        std::env::args_os(),
        &mut input,
        prompt,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
