//! The tool's errors. Each one becomes one line on stderr (`Error: ...`) and exit code 1;
//! none of them panics or prints a backtrace.

use std::time::Duration;

use kcoord_client::ClientError;

use crate::java::kafka_exception_text;

/// A failed admin call.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Transport, protocol or request-level errors from the client library.
    #[error(transparent)]
    Client(#[from] ClientError),

    /// A non-zero group ErrorCode. Displays as the Java exception Kafka's Admin would raise
    /// (`org.apache.kafka.common.errors.GroupIdNotFoundException: ...`), because that is the
    /// text Kafka's tool prints.
    #[error("{}", kafka_exception_text(*code, message.as_deref()))]
    Group {
        group_id: String,
        code: i16,
        message: Option<String>,
    },

    /// `--describe --topology` against a coordinator without StreamsGroupDescribe v1.
    #[error("The coordinator does not support topology descriptions (StreamsGroupDescribe v1 required).")]
    TopologyUnsupported,

    /// The server lacks a version of an API the call needs.
    #[error("{0}")]
    Unsupported(String),

    /// The response does not make sense (e.g. a topology description that does not convert).
    #[error("{0}")]
    InvalidResponse(String),

    /// The call did not finish within `--timeout`.
    #[error("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for {operation} after {} ms.", after.as_millis())]
    Timeout {
        operation: &'static str,
        after: Duration,
    },
}

impl AdminError {
    /// Errors after which the same call is retried (until `--timeout`), as Kafka's Admin does:
    /// the coordinator is loading, moved, or not yet known.
    pub fn is_retriable(&self) -> bool {
        const RETRIABLE: [i16; 3] = [14, 15, 16];
        match self {
            AdminError::Group { code, .. } => RETRIABLE.contains(code),
            AdminError::Client(ClientError::Kafka { code, .. }) => RETRIABLE.contains(code),
            _ => false,
        }
    }
}

/// Why the command as a whole failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad command line; the message names the option, as Kafka's do.
    #[error("{0}")]
    Usage(String),

    /// A `--command-config` file that cannot be read or asks for something unsupported.
    #[error("{0}")]
    Config(String),

    /// An admin call failed; Kafka's tool reports these as "Executing streams group command
    /// failed due to ...".
    #[error("{}", admin_failure(.0))]
    Admin(#[from] AdminError),

    /// Writing the output failed (e.g. a closed pipe).
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
}

fn admin_failure(e: &AdminError) -> String {
    match e {
        // The specification's own sentence; a prefix would only hide it.
        AdminError::TopologyUnsupported => e.to_string(),
        _ => format!("Executing streams group command failed due to {e}"),
    }
}
