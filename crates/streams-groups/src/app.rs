//! The whole program behind `main`: parse, check, connect, run, and map every failure to one
//! `Error: ...` line on stderr and exit code 1.

use std::ffi::OsString;
use std::io::{ErrorKind, Write};

use clap::error::ErrorKind as ClapErrorKind;
use clap::Parser;
use kcoord_client::Client;

use crate::admin::{ClientAdmin, StreamsAdmin};
use crate::command::execute;
use crate::command_config::client_config;
use crate::error::{AdminError, CliError};
use crate::options::{Action, Command, Options};

/// Runs the tool with `args` (program name first) and returns the process exit code.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let options = match Options::try_parse_from(args) {
        Ok(options) => options,
        Err(e) => return clap_exit(&e, out, err),
    };
    let result = options
        .check()
        .and_then(|command| connect_and_execute(&command, out, err));
    finish(result, out, err)
}

/// Runs a checked action against `admin` and returns the exit code, reporting a failure as
/// [`run`] does. This is the program after connecting; tests drive it with a fake admin.
pub async fn run_with_admin<A: StreamsAdmin + ?Sized>(
    action: &Action,
    admin: &A,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let result = execute(action, admin, out, err).await;
    finish(result, out, err)
}

/// The exit code for a result, with a failure printed as one line on stderr.
fn finish(result: Result<i32, CliError>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let code = match result {
        Ok(code) => code,
        // Nobody is reading any more (`| head`): nothing useful to say.
        Err(CliError::Io(e)) if e.kind() == ErrorKind::BrokenPipe => 1,
        Err(e) => {
            let _ = writeln!(err, "Error: {e}");
            1
        }
    };
    let _ = out.flush();
    code
}

fn connect_and_execute(
    command: &Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, CliError> {
    let config = client_config(command.command_config.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Config(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let connect = Client::connect(&command.bootstrap_server, config);
        let client = tokio::time::timeout(command.timeout, connect)
            .await
            .map_err(|_| AdminError::Timeout {
                operation: "a connection to the bootstrap server",
                after: command.timeout,
            })?
            .map_err(AdminError::from)?;
        let admin = ClientAdmin::new(client, command.timeout);
        execute(&command.action, &admin, out, err).await
    })
}

/// Help and version go to stdout with exit 0; any other parse error is one line on stderr.
fn clap_exit(e: &clap::Error, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if matches!(
        e.kind(),
        ClapErrorKind::DisplayHelp | ClapErrorKind::DisplayVersion
    ) {
        let _ = write!(out, "{e}");
        return 0;
    }
    let rendered = e.to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // clap lists the accepted values on a line of its own; keep them on the one line.
    let values = lines
        .find(|l| l.starts_with("[possible values:"))
        .map(|l| format!(" {l}"))
        .unwrap_or_default();
    let _ = writeln!(err, "Error: {first}{values} (see --help)");
    1
}
