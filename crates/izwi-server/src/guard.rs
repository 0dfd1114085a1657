//! Who may use the API, checked before any handler runs:
//! - the `Host` must name the address the server is bound to (or `localhost`), so a web
//!   page whose DNS name was re-pointed at 127.0.0.1 (DNS rebinding) is refused;
//! - a request from a web page (`Origin`) is refused unless that origin was allowed, and
//!   allowed origins get CORS answers;
//! - with an API key, `Authorization: Bearer KEY`;
//! - at most [`crate::MAX_CONCURRENT_REQUESTS`] at once: the rest get 429 at once rather
//!   than waiting in a queue that could grow without end;
//! - each within its time, when a request timeout is set (see [`crate::deadline`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::Semaphore;

use crate::deadline::{self, Deadline};
use crate::error::ApiError;

#[derive(Debug, Clone)]
pub struct Access {
    addr: SocketAddr,
    api_key: Option<String>,
    allowed_origins: Vec<String>,
}

impl Access {
    pub fn new(addr: SocketAddr, api_key: Option<String>, allowed_origins: Vec<String>) -> Self {
        Self {
            addr,
            api_key,
            allowed_origins,
        }
    }

    /// Whether `host` (a `Host` header: name or address, and maybe a port) is this server.
    fn is_own_host(&self, host: &str) -> bool {
        // Bound to every interface: any name may reach it, and the key guards it.
        if self.addr.ip().is_unspecified() {
            return true;
        }
        let (name, port) = split_host(host);
        if port.is_some_and(|p| p != self.addr.port()) {
            return false;
        }
        let name = name.trim_start_matches('[').trim_end_matches(']');
        if name.eq_ignore_ascii_case("localhost") {
            return self.addr.ip().is_loopback();
        }
        name.parse::<IpAddr>().is_ok_and(|ip| ip == self.addr.ip())
    }

    fn allows_origin(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|o| o == origin)
    }

    fn has_key(&self, headers: &HeaderMap) -> bool {
        let Some(key) = &self.api_key else {
            return true;
        };
        // The scheme's name is case-insensitive (RFC 9110).
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, key)| key.trim());
        same_bytes(given.as_bytes(), key.as_bytes())
    }
}

/// `name[:port]`, where name may be a bracketed IPv6 address.
fn split_host(host: &str) -> (&str, Option<u16>) {
    let colon = match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => i,
        _ => return (host, None),
    };
    match host[colon + 1..].parse() {
        Ok(port) => (&host[..colon], Some(port)),
        Err(_) => (host, None),
    }
}

/// Compares without stopping at the first difference, so the time taken does not tell
/// how much of a guessed key was right.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// How much work the server takes on.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// A permit for each request served at once.
    pub busy: Arc<Semaphore>,
    pub timeout: Option<Duration>,
}

pub(crate) async fn check(
    access: Access,
    limits: Limits,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !access.is_own_host(host) {
        return ApiError::forbidden(format!(
            "requests must be addressed to this server ({}), not to {host:?}",
            access.addr
        ))
        .into_response();
    }
    let origin = match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => None,
        Some(Ok(origin)) => Some(origin.to_owned()),
        Some(Err(_)) => {
            return ApiError::forbidden("the Origin header is not text").into_response()
        }
    };
    if let Some(origin) = &origin {
        if !access.allows_origin(origin) {
            return ApiError::forbidden(format!(
                "web pages from {origin} may not use this server (allow it with --allow-origin)"
            ))
            .into_response();
        }
        if request.method() == Method::OPTIONS {
            // A preflight: the headers the page's client wants to send (the openai SDK
            // adds its own `x-stainless-*` ones) are allowed to an allowed origin.
            let mut response = with_cors(StatusCode::NO_CONTENT.into_response(), origin);
            if let Some(asked) = request
                .headers()
                .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            {
                response
                    .headers_mut()
                    .insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
            }
            response.headers_mut().insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
            return response;
        }
    }
    if !access.has_key(headers) {
        drain(request).await;
        return closing(
            ApiError::unauthorized("a valid API key is needed: Authorization: Bearer KEY")
                .into_response(),
        );
    }
    let Ok(permit) = limits.busy.try_acquire_owned() else {
        drain(request).await;
        return closing(ApiError::busy().into_response());
    };
    let deadline = Deadline::starting_now(limits.timeout);
    request.extensions_mut().insert(deadline);
    // The handler's answer, and when its body must be sent by.
    let (response, send_by) = match deadline.at() {
        // Dropping the handler at the deadline drops the job it waits for: cancelled.
        Some(at) => match tokio::time::timeout_at(at, next.run(request)).await {
            Ok(response) => (response, Some(at)),
            Err(_) => (ApiError::timeout(deadline.reason()).into_response(), None),
        },
        None => (next.run(request).await, None),
    };
    // A streamed answer (speech, chat) is still being made after its handler returned:
    // the request counts until its body has been sent.
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &permit;
        chunk
    });
    let body = match send_by {
        Some(at) => deadline::cut_off(body, at, deadline.reason()),
        None => Body::from_stream(body),
    };
    let response = Response::from_parts(parts, body);
    match &origin {
        Some(origin) => with_cors(response, origin),
        None => response,
    }
}

/// How long a refused client's upload is read for at most.
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Reads and drops what a refused client may still be sending (within the upload
/// limit and [`DRAIN_TIME`]), so it hears the refusal rather than a connection closed
/// under its upload. Nothing is kept: clients refused before the request limit applies
/// cannot make the server hold their bytes. A client that waits to be told to send
/// (`Expect: 100-continue`) is not: reading would ask it for the upload.
async fn drain(request: Request) {
    let waits = request
        .headers()
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if waits {
        return;
    }
    let body = request.into_body();
    let mut chunks = body.into_data_stream();
    let mut left = crate::MAX_UPLOAD_BYTES + 64 * 1024;
    let read = async {
        while let Some(Ok(chunk)) = chunks.next().await {
            let Some(rest) = left.checked_sub(chunk.len()) else {
                break;
            };
            left = rest;
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

/// A refusal after which the connection is closed: whatever the client sends next is
/// not read.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn with_cors(mut response: Response, origin: &str) -> Response {
    let headers = response.headers_mut();
    if let Ok(origin) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(addr: &str) -> Access {
        Access::new(addr.parse().unwrap(), None, Vec::new())
    }

    #[test]
    fn only_its_own_address_is_a_host() {
        let local = access("127.0.0.1:8080");
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "127.0.0.1"] {
            assert!(local.is_own_host(host), "{host}");
        }
        for host in ["evil.example:8080", "127.0.0.1:9999", "", "10.0.0.2:8080"] {
            assert!(!local.is_own_host(host), "{host}");
        }
        let v6 = access("[::1]:8080");
        assert!(v6.is_own_host("[::1]:8080") && v6.is_own_host("localhost:8080"));
        let lan = access("192.168.1.5:8080");
        assert!(lan.is_own_host("192.168.1.5:8080"));
        assert!(!lan.is_own_host("localhost:8080"));
        assert!(access("0.0.0.0:8080").is_own_host("anything.example"));
    }

    #[test]
    fn the_key_must_match_exactly() {
        let a = Access::new("127.0.0.1:1".parse().unwrap(), Some("k3y".into()), vec![]);
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            h
        };
        assert!(a.has_key(&with("Bearer k3y")));
        assert!(a.has_key(&with("bearer k3y")));
        assert!(!a.has_key(&with("Bearer k3")));
        assert!(!a.has_key(&with("k3y")));
        assert!(!a.has_key(&HeaderMap::new()));
    }
}
