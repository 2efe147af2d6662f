//! What `kafka-console-producer` and `kafka-console-consumer` share: their command lines
//! parse with clap but fail as Kafka's `CommandLineUtils.printUsageAndExit` does (the message
//! on stderr, exit status 1), and `--property key=value` lists read as Kafka's
//! `CommandLineUtils.parseKeyValueArgs` reads them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;

use clap::Parser;

/// Parses the command line (program name first). `Err` carries the exit status once the
/// help or version (0) or the error (1) has been printed.
pub(crate) fn parse_args<P, I, T>(
    args: I,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<P, i32>
where
    P: Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    P::try_parse_from(args).map_err(|e| {
        let help = matches!(
            e.kind(),
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
        );
        let _ = if help {
            write!(out, "{e}")
        } else {
            write!(err, "{e}")
        };
        if help {
            0
        } else {
            1
        }
    })
}

/// `key=value` pairs, split at the first `=`; a missing value is the empty string; the last
/// of a repeated key wins (a Java `Properties`).
pub(crate) fn properties(pairs: &[String]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => (key.to_string(), value.to_string()),
            None => (pair.clone(), String::new()),
        })
        .collect()
}

/// Kafka's reading of a boolean property: `true` in any case, blanks trimmed; anything else
/// is false.
pub(crate) fn is_true(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

/// Printed to stderr, ignoring a closed stderr (there is nowhere left to report it).
pub(crate) fn report(err: &mut dyn Write, message: impl std::fmt::Display) {
    let _ = writeln!(err, "{message}");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_split_at_the_first_equals_sign() {
        let p = properties(&[
            "a=1".into(),
            "key.separator==".into(),
            "bare".into(),
            "a=2".into(),
            "empty=".into(),
        ]);
        assert_eq!(p.get("a").map(String::as_str), Some("2"));
        assert_eq!(p.get("key.separator").map(String::as_str), Some("="));
        assert_eq!(p.get("bare").map(String::as_str), Some(""));
        assert_eq!(p.get("empty").map(String::as_str), Some(""));
        assert!(is_true(" TRUE ") && !is_true("yes"));
    }
}
