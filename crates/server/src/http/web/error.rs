//! The API's errors: an HTTP status and `{"error": "<NAME>", "message": "..."}`, where NAME is
//! Kafka's error name for errors Kafka answered, or one of the API's own names below.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use kcoord_wire::ErrorCode;
use serde::Serialize;

/// The group has no topology description stored (status NOT_STORED), so nothing to draw.
pub const TOPOLOGY_DESCRIPTION_NOT_STORED: &str = "TOPOLOGY_DESCRIPTION_NOT_STORED";
/// The coordinator could not read the group's topology description (status ERROR).
pub const TOPOLOGY_DESCRIPTION_ERROR: &str = "TOPOLOGY_DESCRIPTION_ERROR";

/// An error answer of the API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {error}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub error: String,
    pub message: String,
}

/// The body of an error answer.
#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: &'a str,
}

impl ApiError {
    pub fn new(status: StatusCode, error: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: error.to_owned(),
            message: message.into(),
        }
    }

    /// A Kafka error code as an HTTP error: the status that tells an HTTP client what to do
    /// (retry later, ask for access, stop asking), Kafka's name, and `message` or else Kafka's
    /// description of the error.
    pub fn kafka(code: i16, message: Option<&str>) -> ApiError {
        let known = ErrorCode::from_code(code);
        let error = known.map_or_else(
            || format!("UNKNOWN_ERROR_CODE_{code}"),
            |e| e.name().to_owned(),
        );
        let message = match (message, known) {
            (Some(m), _) if !m.is_empty() => m.to_owned(),
            (_, Some(e)) => e.message().to_owned(),
            (_, None) => format!("Kafka error code {code}"),
        };
        ApiError {
            status: http_status(code),
            error,
            message,
        }
    }
}

impl ApiError {
    /// A failed read of the upstream cluster (gateway mode): its Kafka error, or
    /// COORDINATOR_NOT_AVAILABLE (503: retry later) when it did not answer.
    pub fn upstream(error: &kcoord_client::ClientError) -> ApiError {
        let code = error
            .error_code()
            .unwrap_or(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        ApiError::kafka(code.code(), Some(&error.to_string()))
    }
}

/// The HTTP status of a Kafka error code.
fn http_status(code: i16) -> StatusCode {
    let Some(error) = ErrorCode::from_code(code) else {
        return StatusCode::INTERNAL_SERVER_ERROR;
    };
    match error {
        ErrorCode::GROUP_ID_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::INVALID_GROUP_ID | ErrorCode::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::COORDINATOR_NOT_AVAILABLE
        | ErrorCode::NOT_COORDINATOR => StatusCode::SERVICE_UNAVAILABLE,
        e if e.name().ends_with("_AUTHORIZATION_FAILED") => StatusCode::FORBIDDEN,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: &self.error,
            message: &self.message,
        };
        (self.status, super::no_store(), Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_errors_map_to_http_statuses() {
        let status = |e: ErrorCode| ApiError::kafka(e.code(), None).status;
        assert_eq!(status(ErrorCode::GROUP_ID_NOT_FOUND), StatusCode::NOT_FOUND);
        assert_eq!(
            status(ErrorCode::GROUP_AUTHORIZATION_FAILED),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            status(ErrorCode::TOPIC_AUTHORIZATION_FAILED),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            status(ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
            StatusCode::FORBIDDEN
        );
        for unavailable in [
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_COORDINATOR,
        ] {
            assert_eq!(status(unavailable), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(status(ErrorCode::INVALID_GROUP_ID), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(ErrorCode::UNKNOWN_SERVER_ERROR),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            ApiError::kafka(-2000, None),
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "UNKNOWN_ERROR_CODE_-2000",
                "Kafka error code -2000"
            )
        );
    }

    #[test]
    fn the_message_is_kafkas_unless_the_answer_had_one() {
        let e = ApiError::kafka(ErrorCode::GROUP_ID_NOT_FOUND.code(), None);
        assert_eq!(e.error, "GROUP_ID_NOT_FOUND");
        assert_eq!(e.message, ErrorCode::GROUP_ID_NOT_FOUND.message());
        let e = ApiError::kafka(ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(), Some("why"));
        assert_eq!(e.message, "why");
    }
}
