//! The little HTTP/1.x the endpoint speaks, without IO: [`route`] reads a request head and
//! says what to answer; [`response`] writes the answer. Every request gets a status line and
//! `Connection: close` — never a panic, whatever the bytes.

/// The longest request head read (request line and headers); a longer one is answered 431.
pub(crate) const MAX_HEAD: usize = 8 * 1024;

/// The path the metrics are served on.
pub(crate) const PATH: &str = "/metrics";

/// What to answer a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// 200 with the metrics; without the body for `HEAD`.
    Metrics { head: bool },
    /// An error status.
    Status(Status),
}

/// The error statuses the endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    BadRequest,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    HeadTooLarge,
    Internal,
    /// The inspector's event stream is at its client limit.
    #[cfg_attr(not(feature = "inspector"), allow(dead_code))]
    Unavailable,
    VersionNotSupported,
}

impl Status {
    pub(crate) fn line(self) -> (u16, &'static str) {
        match self {
            Status::BadRequest => (400, "Bad Request"),
            Status::NotFound => (404, "Not Found"),
            Status::MethodNotAllowed => (405, "Method Not Allowed"),
            Status::RequestTimeout => (408, "Request Timeout"),
            Status::HeadTooLarge => (431, "Request Header Fields Too Large"),
            Status::Internal => (500, "Internal Server Error"),
            Status::Unavailable => (503, "Service Unavailable"),
            Status::VersionNotSupported => (505, "HTTP Version Not Supported"),
        }
    }
}

/// The end of the head in `buf` (the index just after the blank line), if it is complete.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .or_else(|| buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2))
}

/// A request head the endpoints understand: a valid request line of HTTP/1.0 or 1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    /// The method (a valid token; which ones are allowed is the endpoint's business).
    pub(crate) method: &'a str,
    /// The path, without the query.
    pub(crate) path: &'a str,
    /// The query string after `?` (empty if none).
    pub(crate) query: &'a str,
}

/// The request line of `head`, or the status to answer a malformed one.
pub(crate) fn parse(head: &[u8]) -> Result<Request<'_>, Status> {
    let head = std::str::from_utf8(head).map_err(|_| Status::BadRequest)?;
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Status::BadRequest);
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if !token(method) || !target.starts_with('/') {
        return Err(Status::BadRequest);
    }
    match version {
        "HTTP/1.0" | "HTTP/1.1" => {}
        v if v.starts_with("HTTP/") => return Err(Status::VersionNotSupported),
        _ => return Err(Status::BadRequest),
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method,
        path,
        query,
    })
}

/// What to answer the request whose head is `head`.
pub(crate) fn route(head: &[u8]) -> Route {
    let request = match parse(head) {
        Ok(request) => request,
        Err(status) => return Route::Status(status),
    };
    if request.path != PATH {
        return Route::Status(Status::NotFound);
    }
    match request.method {
        "GET" => Route::Metrics { head: false },
        "HEAD" => Route::Metrics { head: true },
        _ => Route::Status(Status::MethodNotAllowed),
    }
}

/// The full response: status line, headers, and `body` unless `head_only`.
pub(crate) fn response(
    (code, reason): (u16, &str),
    content_type: &str,
    body: &str,
    head_only: bool,
) -> Vec<u8> {
    let allow = if code == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests;
