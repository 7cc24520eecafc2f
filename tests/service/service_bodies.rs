//! Bodies over `--max-body-bytes`, sent by a raw TCP client the way real clients send them: the
//! 413 and its error object can be read while the client is still sending (declared length,
//! chunked); a client that asks `Expect: 100-continue` gets the 413 instead of `100 Continue` and
//! never has to send the body; a client that writes its whole body before reading can finish
//! writing (within the drain bound) and read the 413. The server keeps serving after each.

use crate::service_support::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const LIMIT: &str = "4096";
const HUGE: usize = 64 << 20;

/// One answer read off the socket: status line, lower-cased header lines, body.
pub(crate) struct Answer {
    pub(crate) status_line: String,
    headers: Vec<String>,
    pub(crate) body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| h.strip_prefix(&format!("{name}: ")))
    }
}

/// Reads one HTTP/1.1 answer with a `Content-Length`, whatever happens to the socket after it.
fn read_answer(stream: &mut TcpStream) -> Answer {
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let mut lines = text[..end].split("\r\n");
            let status_line = lines.next().unwrap_or_default().to_string();
            let headers: Vec<String> = lines
                .map(|l| match l.split_once(':') {
                    Some((n, v)) => format!("{}: {}", n.trim().to_ascii_lowercase(), v.trim()),
                    None => l.to_string(),
                })
                .collect();
            let length: usize = headers
                .iter()
                .find_map(|h| h.strip_prefix("content-length: "))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no content-length: {text}"));
            if data.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&data[end + 4..end + 4 + length]).into_owned();
                return Answer { status_line, headers, body };
            }
        }
        assert!(Instant::now() < deadline, "no whole answer in time; read {:?}", String::from_utf8_lossy(&data));
        match stream.read(&mut buffer) {
            Ok(0) => panic!("the connection closed before a whole answer: {:?}", String::from_utf8_lossy(&data)),
            Ok(n) => data.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("reading the answer failed ({e}) after {:?}", String::from_utf8_lossy(&data)),
        }
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream
}

/// Writes `total` bytes of body from another thread (as a client that writes before it reads),
/// in `frame`-sized pieces; stops quietly when the server closes.
fn send_in_background(stream: &TcpStream, total: usize, chunked: bool) -> std::thread::JoinHandle<usize> {
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        let piece = vec![b'x'; 64 * 1024];
        let mut sent = 0;
        while sent < total {
            let ok = if chunked {
                writer.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).is_ok()
                    && writer.write_all(&piece).is_ok()
                    && writer.write_all(b"\r\n").is_ok()
            } else {
                writer.write_all(&piece).is_ok()
            };
            if !ok {
                break;
            }
            sent += piece.len();
        }
        if chunked && sent >= total {
            let _ = writer.write_all(b"0\r\n\r\n");
        }
        sent
    })
}

/// The head of a POST to `path` with a `size`-byte body, chunked or with its length declared.
fn head(path: &str, size: usize, chunked: bool) -> String {
    let framing = if chunked { "Transfer-Encoding: chunked".to_string() } else { format!("Content-Length: {size}") };
    format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{framing}\r\n\r\n")
}

/// Sends a 64 MiB body to `path` from another thread while reading: the 413 arrives, and the
/// server did not read the whole body.
fn assert_refused_while_sending(addr: SocketAddr, path: &str, chunked: bool) {
    let mut stream = connect(addr);
    stream.write_all(head(path, HUGE, chunked).as_bytes()).unwrap();
    let writer = send_in_background(&stream, HUGE, chunked);
    assert_413(&read_answer(&mut stream));
    let _ = stream.shutdown(Shutdown::Both);
    let sent = writer.join().unwrap();
    assert!(sent < HUGE, "the server read all {HUGE} bytes of a refused body");
}

/// POSTs a `size`-byte body to `path` as a client that writes all of it before it reads and gives
/// up on the first failed write (every write must succeed), and reads the answer.
pub(crate) fn post_whole_body_first(addr: SocketAddr, path: &str, size: usize, chunked: bool) -> Answer {
    let piece = vec![b'x'; 64 * 1024];
    let mut stream = connect(addr);
    stream.write_all(head(path, size, chunked).as_bytes()).unwrap();
    for _ in 0..size / piece.len() {
        if chunked {
            stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).unwrap();
            stream.write_all(&piece).unwrap();
            stream.write_all(b"\r\n").unwrap();
        } else {
            stream.write_all(&piece).expect("every write of the body succeeds");
        }
    }
    if chunked {
        stream.write_all(b"0\r\n\r\n").unwrap();
    }
    read_answer(&mut stream)
}

fn assert_413(answer: &Answer) {
    assert!(answer.status_line.starts_with("HTTP/1.1 413"), "{}", answer.status_line);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.header("connection"), Some("close"));
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["error"]["code"], "payload_too_large", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("4096"), "{body}");
}

#[test]
fn a_declared_oversized_body_gets_a_413_the_client_can_read_while_sending() {
    let f = Fixture::start("declared", &["--no-demo", "--max-body-bytes", LIMIT]);
    for path in ["/v1/allocations", "/v1/sessions", "/v1/sessions/nope/jobs", "/no/such/route"] {
        assert_refused_while_sending(f.server.addr, path, false);
    }
    assert_eq!(f.client().post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
}

#[test]
fn expect_100_continue_gets_the_413_instead_of_100_continue() {
    let f = Fixture::start("expect", &["--no-demo", "--max-body-bytes", LIMIT]);
    let mut stream = connect(f.server.addr);
    let head = format!(
        "POST /v1/allocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\
         Expect: 100-continue\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    // The client sends nothing more: it waits for 100 Continue or a final answer.
    let answer = read_answer(&mut stream);
    assert_413(&answer);
    // And the server closes the connection rather than wait for a body it refused.
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(rest.is_empty(), "after the 413: {:?}", String::from_utf8_lossy(&rest));

    // Within the limit, Expect still works: 100 Continue, then the answer.
    let body = bytes(&serde_json::json!({"policy": "max_min_fairness"}));
    let mut stream = connect(f.server.addr);
    let head = format!(
        "POST /v1/allocations HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut continued = [0u8; 25];
    stream.read_exact(&mut continued).unwrap();
    assert_eq!(&continued, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(&body).unwrap();
    let answer = read_answer(&mut stream);
    assert!(answer.status_line.starts_with("HTTP/1.1 400"), "{}", answer.status_line);
}

#[test]
fn a_chunked_body_that_crosses_the_limit_gets_a_413_the_client_can_read() {
    let f = Fixture::start("chunked", &["--no-demo", "--max-body-bytes", LIMIT]);
    for path in ["/v1/allocations", "/v1/sessions"] {
        assert_refused_while_sending(f.server.addr, path, true);
    }
    assert_eq!(f.client().post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
}

#[test]
fn a_client_that_writes_its_whole_body_before_reading_gets_the_413() {
    // Many clients (a plain `requests.post`, say) write the whole body and only then read, and
    // give up on the first failed write. A body within the drain bound is read to its end, so
    // every write succeeds and the 413 is there to read; closing at once instead would make the
    // client's writes fail (a broken pipe) most of the time.
    let f = Fixture::start("write-first", &["--no-demo", "--max-body-bytes", LIMIT]);
    let size = 3 << 20;
    assert!(size as u64 <= arbiter::service::body_limit::DRAIN_BYTES);
    for chunked in [false, true] {
        for _ in 0..5 {
            assert_413(&post_whole_body_first(f.server.addr, "/v1/allocations", size, chunked));
        }
    }
}
