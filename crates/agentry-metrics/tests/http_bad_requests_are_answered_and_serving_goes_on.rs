//! The endpoint answers every request with a status — a wrong path 404, a wrong method 405,
//! garbage 400, an endless head 431, a client that says nothing and closes nothing — and
//! keeps serving after each; stopping it frees its port.

mod common;

use agentry::Env;
use agentry_metrics::Metrics;
use common::{exchange, scrape, status};
use std::io::Write;
use std::net::{TcpListener, TcpStream};

#[test]
fn bad_requests_get_their_status_and_the_endpoint_keeps_serving() {
    let env = Env::new().expect("env");
    let server = Metrics::new(env.handle())
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr = server.local_addr();
    let cases: [(&[u8], u16); 7] = [
        (b"GET /other HTTP/1.1\r\n\r\n", 404),
        (b"GET / HTTP/1.1\r\n\r\n", 404),
        (b"DELETE /metrics HTTP/1.1\r\n\r\n", 405),
        (b"garbage\r\n\r\n", 400),
        (b"\x00\xff\xfe\r\n\r\n", 400),
        (b"GET /metrics HTTP/9.9\r\n\r\n", 505),
        (b"GET /metrics HTTP/1.1\r\nX: half a head", 400), // then closes its side
    ];
    for (request, expected) in cases {
        let answer = if expected == 400 && request.ends_with(b"head") {
            let mut s = TcpStream::connect(addr).expect("connected");
            s.write_all(request).expect("sent");
            s.shutdown(std::net::Shutdown::Write).expect("half-closed");
            let mut answer = String::new();
            std::io::Read::read_to_string(&mut s, &mut answer).expect("answer");
            answer
        } else {
            exchange(addr, request)
        };
        assert_eq!(status(&answer), expected, "{request:?}: {answer}");
        assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
        assert!(scrape(addr).contains("# TYPE agentry_agents gauge\n"));
    }
    // A head longer than any request: 431, and serving goes on.
    let mut long = b"GET /metrics HTTP/1.1\r\n".to_vec();
    long.extend(std::iter::repeat_n(b'x', 20_000));
    let answer = exchange(addr, &long);
    assert_eq!(status(&answer), 431, "{answer}");
    // HEAD: the head only.
    let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status(&head), 200);
    assert!(head.ends_with("\r\n\r\n"), "{head}");
    // A client that connects and closes without a word.
    drop(TcpStream::connect(addr).expect("connected"));
    assert!(scrape(addr).contains("agentry_agents 0\n"));

    server.stop();
    // The port is free again.
    TcpListener::bind(addr).expect("the port is free once the server stopped");
    env.handle().stop();
    env.run();
}

#[test]
fn dropping_the_server_stops_it_too() {
    let env = Env::new().expect("env");
    let server = Metrics::new(env.handle())
        .serve("127.0.0.1:0")
        .expect("serving");
    let addr = server.local_addr();
    assert!(scrape(addr).starts_with("# HELP "));
    drop(server);
    TcpListener::bind(addr).expect("the port is free once the server is dropped");
    env.handle().stop();
    env.run();
}
