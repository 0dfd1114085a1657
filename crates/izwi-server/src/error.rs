//! Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with the
//! status code OpenAI would give, so clients' own error handling works unchanged.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use izwi_runtime::{ErrorKind, RuntimeError};
use serde_json::json;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, `server_error`...
    pub kind: &'static str,
    pub code: Option<&'static str>,
    /// The request field at fault, when one is.
    pub param: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            code: None,
            param: None,
        }
    }

    /// A request that cannot be served as asked (400).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// `param` is missing or wrong (400).
    pub fn param(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            param: Some(param),
            ..Self::invalid(message)
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            code: Some("invalid_api_key"),
            ..Self::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
        }
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "permission_error", message)
    }

    pub fn busy() -> Self {
        Self {
            code: Some("rate_limit_exceeded"),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "Izwi is serving as many requests as it takes at once: try again shortly",
            )
        }
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            message,
        )
    }

    pub fn model_not_found(model: &str, what: &str) -> Self {
        Self {
            code: Some("model_not_found"),
            param: Some("model"),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                format!("the model `{model}` does not exist or is not {what}"),
            )
        }
    }

    fn not_found_path(path: &str) -> Self {
        Self {
            code: Some("unknown_url"),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                format!("Izwi's API has no {path}"),
            )
        }
    }

    /// The request ran past the server's request timeout (504).
    pub fn timeout(message: impl Into<String>) -> Self {
        Self {
            code: Some("timeout"),
            ..Self::new(StatusCode::GATEWAY_TIMEOUT, "server_error", message)
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        let message = e.to_string();
        match e.kind() {
            ErrorKind::NotFound => Self {
                code: Some("not_found"),
                ..Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
            },
            ErrorKind::Invalid => Self::invalid(message),
            ErrorKind::Audio => Self {
                code: Some("invalid_audio"),
                param: Some("file"),
                ..Self::invalid(message)
            },
            ErrorKind::Cancelled => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
            }
            ErrorKind::Network => Self::new(StatusCode::BAD_GATEWAY, "server_error", message),
            ErrorKind::Model | ErrorKind::Disk | ErrorKind::Internal => Self::internal(message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        });
        (self.status, Json(body)).into_response()
    }
}

/// Any path the API does not have.
pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found_path(uri.path())
}

/// A path the API has, asked with a method it does not take.
pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{} does not take {method}", uri.path()),
    )
}

/// A JSON body that could not be read, with the status axum gives it (400, 413, 415),
/// but 400 where axum says 422 (a field of the wrong type, one not taken): OpenAI
/// answers every malformed body with 400.
pub(crate) fn bad_json(e: axum::extract::rejection::JsonRejection) -> ApiError {
    let status = match e.status() {
        StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
        other => other,
    };
    ApiError {
        status,
        ..ApiError::invalid(e.body_text())
    }
}
