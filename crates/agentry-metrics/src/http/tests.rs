use super::*;

#[test]
fn metrics_are_served_on_get_and_head_only_at_their_path() {
    assert_eq!(
        route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
        Route::Metrics { head: false }
    );
    assert_eq!(
        route(b"GET /metrics?name[]=x HTTP/1.0\r\n\r\n"),
        Route::Metrics { head: false }
    );
    assert_eq!(
        route(b"HEAD /metrics HTTP/1.1\r\n\r\n"),
        Route::Metrics { head: true }
    );
    assert_eq!(
        route(b"GET / HTTP/1.1\r\n\r\n"),
        Route::Status(Status::NotFound)
    );
    assert_eq!(
        route(b"GET /metricsx HTTP/1.1\r\n\r\n"),
        Route::Status(Status::NotFound)
    );
    assert_eq!(
        route(b"POST /metrics HTTP/1.1\r\n\r\n"),
        Route::Status(Status::MethodNotAllowed)
    );
}

#[test]
fn malformed_request_lines_are_bad_requests() {
    for bad in [
        &b"\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"GET /metrics\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1 extra\r\n\r\n",
        b"GET metrics HTTP/1.1\r\n\r\n",
        b"G(T /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics FTP/1.1\r\n\r\n",
        b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
    ] {
        assert_eq!(route(bad), Route::Status(Status::BadRequest), "{bad:?}");
    }
    assert_eq!(
        route(b"GET /metrics HTTP/2.0\r\n\r\n"),
        Route::Status(Status::VersionNotSupported)
    );
}

#[test]
fn a_head_ends_at_the_first_blank_line() {
    assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nrest"), Some(24));
    assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(16));
    assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n"), None);
}

#[test]
fn responses_carry_length_and_close_and_head_has_no_body() {
    let full = response((200, "OK"), "text/plain", "abc", false);
    assert_eq!(
        String::from_utf8(full).unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
    );
    let head = String::from_utf8(response((200, "OK"), "text/plain", "abc", true)).unwrap();
    assert!(
        head.ends_with("Content-Length: 3\r\nConnection: close\r\n\r\n"),
        "{head}"
    );
    let refused = String::from_utf8(response(
        Status::MethodNotAllowed.line(),
        "text/plain",
        "",
        false,
    ))
    .unwrap();
    assert!(
        refused.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")
            && refused.contains("Allow: GET, HEAD\r\n")
    );
}
