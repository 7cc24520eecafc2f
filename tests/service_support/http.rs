//! A minimal blocking HTTP/1.1 client over one keep-alive connection, for the service tests and
//! the load-test client (`examples/load_test.rs` includes this file): no dependencies, and
//! nothing between the caller and the socket that could blur a latency measurement.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON (panics with the body if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("status {} body is not JSON ({e}): {}", self.status, self.text()))
    }
}

/// A connection to one server, reopened when the server closes it.
pub struct Client {
    addr: SocketAddr,
    conn: Option<BufReader<TcpStream>>,
    pub timeout: Duration,
    /// Sent as `Authorization: Bearer <token>` with every request.
    pub token: Option<String>,
}

impl Client {
    pub fn new(addr: SocketAddr) -> Client {
        Client { addr, conn: None, timeout: Duration::from_secs(120), token: None }
    }

    /// A client that sends `token` with every request.
    pub fn with_token(addr: SocketAddr, token: &str) -> Client {
        Client { token: Some(token.to_string()), ..Client::new(addr) }
    }

    pub fn get(&mut self, path: &str) -> io::Result<Reply> {
        self.send("GET", path, &[], &[])
    }

    pub fn post(&mut self, path: &str, body: &[u8]) -> io::Result<Reply> {
        self.send("POST", path, body, &[])
    }

    pub fn put(&mut self, path: &str, body: &[u8]) -> io::Result<Reply> {
        self.send("PUT", path, body, &[])
    }

    pub fn delete(&mut self, path: &str) -> io::Result<Reply> {
        self.send("DELETE", path, &[], &[])
    }

    /// Sends one request; retries once on a fresh connection if a kept-alive one was closed.
    pub fn send(&mut self, method: &str, path: &str, body: &[u8], headers: &[(&str, &str)]) -> io::Result<Reply> {
        let fresh = self.conn.is_none();
        match self.try_send(method, path, body, headers) {
            Ok(reply) => Ok(reply),
            Err(_) if !fresh => {
                self.conn = None;
                self.try_send(method, path, body, headers)
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }

    fn try_send(&mut self, method: &str, path: &str, body: &[u8], headers: &[(&str, &str)]) -> io::Result<Reply> {
        if self.conn.is_none() {
            let stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5))?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(self.timeout))?;
            self.conn = Some(BufReader::with_capacity(64 * 1024, stream));
        }
        let conn = self.conn.as_mut().expect("connected above");
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", self.addr, body.len());
        if !body.is_empty() && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            head.push_str("Content-Type: application/json\r\n");
        }
        if let Some(token) = &self.token {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
                head.push_str(&format!("Authorization: Bearer {token}\r\n"));
            }
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut message = head.into_bytes();
        message.extend_from_slice(body);
        // A server may answer (413) and close before reading a large body: keep the answer.
        let written = conn.get_mut().write_all(&message);
        let reply = read_reply(conn);
        match (written, reply) {
            (_, Ok((reply, keep_alive))) => {
                if !keep_alive {
                    self.conn = None;
                }
                Ok(reply)
            }
            (Err(e), Err(_)) | (Ok(()), Err(e)) => {
                self.conn = None;
                Err(e)
            }
        }
    }
}

fn read_reply(conn: &mut BufReader<TcpStream>) -> io::Result<(Reply, bool)> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed before a reply"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if size == 0 {
                line.clear();
                conn.read_line(&mut line)?;
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            conn.read_exact(&mut body[start..])?;
            line.clear();
            conn.read_line(&mut line)?;
        }
    } else if let Some(length) = find("content-length") {
        let length: usize = length.parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        body.resize(length, 0);
        conn.read_exact(&mut body)?;
    }
    let keep_alive = !find("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Ok((Reply { status, headers, body }, keep_alive))
}
