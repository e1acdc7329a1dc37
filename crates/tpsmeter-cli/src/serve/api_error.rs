//! The one shape every refusal of `tpsmeter serve` takes: OpenAI's error object
//! (`{"error": {"message", "type", "param", "code"}}`) with an HTTP status, so any OpenAI
//! client shows the reason instead of failing to parse a body of another shape.

use hyper::StatusCode;
use serde_json::{Value, json};

/// A request the server refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error` for the client's mistakes, `server_error`
    /// for ours or for being out of capacity.
    pub kind: &'static str,
    /// The request field at fault, if one is.
    pub param: Option<&'static str>,
    /// A stable machine-readable reason (`context_length_exceeded`, ...).
    pub code: Option<&'static str>,
}

impl ApiError {
    /// A 400 about the request as a whole.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
        }
    }

    /// A 400 about field `param`.
    pub fn field(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            param: Some(param),
            ..Self::invalid(message)
        }
    }

    /// Another status, with a machine-readable `code`.
    pub fn status(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        let kind = if status.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        Self {
            status,
            message: message.into(),
            kind,
            param: None,
            code: Some(code),
        }
    }

    /// Sets the machine-readable code.
    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The response body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}
