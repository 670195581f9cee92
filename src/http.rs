//! The exporter's HTTP/1.1 server: one thread, non-blocking sockets and `poll(2)`, bounded
//! in everything a client controls (docs/operating.md, "Prometheus"):
//!
//! * connections: at most [`Limits::max_conns`]; at the cap a new one replaces the one idle
//!   the longest (a scrape always gets in; idle connections cost no thread);
//! * a request head: at most [`Limits::max_head`] bytes (431 and close beyond), complete
//!   within [`Limits::head_timeout`] of its first byte; no request bodies (400);
//! * an idle keep-alive connection is closed after [`Limits::idle`];
//! * a response must be taken by the client within [`Limits::write_timeout`]; while it is
//!   not, the connection's further (pipelined) requests are not read: a client that
//!   pipelines and never reads holds one response and its own socket buffers, nothing else.
//!
//! Memory is bounded by `max_conns × (max_head + one page)`. The handler runs on this thread
//! (a scrape is a few telemetry reads); nothing else waits on a slow client.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// What a client may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_conns: usize,
    pub max_head: usize,
    pub head_timeout: Duration,
    pub idle: Duration,
    pub write_timeout: Duration,
}

impl Default for Limits {
    /// 256 connections, 8 KiB heads within 10 s, 30 s idle, 10 s to take a response.
    fn default() -> Limits {
        Limits {
            max_conns: 256,
            max_head: 8 << 10,
            head_timeout: Duration::from_secs(10),
            idle: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// A response: status, content type, body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response { status, content_type, body: body.into() }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

struct Conn {
    stream: TcpStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    sent: usize,
    /// Close once `out` is sent.
    close_after: bool,
    last_active: Instant,
    head_started: Option<Instant>,
    write_started: Instant,
    /// The client closed its side: answer what it sent, then close.
    eof: bool,
    dead: bool,
}

impl Conn {
    fn writing(&self) -> bool {
        self.sent < self.out.len()
    }

    fn deadline(&self, l: &Limits) -> Instant {
        if self.writing() {
            self.write_started + l.write_timeout
        } else if let Some(t) = self.head_started {
            t + l.head_timeout
        } else {
            self.last_active + l.idle
        }
    }

    /// Send what the socket takes now.
    fn flush(&mut self) {
        while self.writing() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => {
                    self.dead = true;
                    return;
                }
                Ok(n) => {
                    self.sent += n;
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    return;
                }
            }
        }
        self.out.clear();
        self.sent = 0;
        if self.close_after {
            self.dead = true;
        }
    }

    /// Read what is there (at most up to the head limit; nothing while a response waits).
    fn fill(&mut self, l: &Limits) {
        let mut chunk = [0u8; 4096];
        while !self.writing() && !self.eof && self.inbuf.len() <= l.max_head {
            let room = (l.max_head + 1 - self.inbuf.len()).min(chunk.len());
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) => {
                    self.eof = true;
                    return;
                }
                Ok(n) => {
                    self.inbuf.extend_from_slice(&chunk[..n]);
                    self.head_started.get_or_insert_with(Instant::now);
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    return;
                }
            }
        }
    }

    fn respond(&mut self, r: &Response, head_only: bool, close: bool) {
        self.out.clear();
        self.out.extend_from_slice(
            format!(
                "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
                r.status,
                reason(r.status),
                r.content_type,
                r.body.len(),
                if close { "close" } else { "keep-alive" }
            )
            .as_bytes(),
        );
        if !head_only {
            self.out.extend_from_slice(&r.body);
        }
        self.sent = 0;
        self.close_after = close;
        self.write_started = Instant::now();
    }

    /// Answer the complete requests in `inbuf`, one at a time: the next only once the
    /// previous response is sent.
    fn serve(&mut self, l: &Limits, handler: &mut dyn FnMut(&str) -> Response) {
        while !self.dead && !self.writing() {
            let Some(end) = self.inbuf.windows(4).position(|w| w == b"\r\n\r\n") else {
                if self.inbuf.len() > l.max_head {
                    self.respond(&Response::new(431, "text/plain", "request head too large\n"), false, true);
                    self.flush();
                }
                return;
            };
            if end + 4 > l.max_head {
                self.respond(&Response::new(431, "text/plain", "request head too large\n"), false, true);
                self.flush();
                return;
            }
            let head: Vec<u8> = self.inbuf.drain(..end + 4).collect();
            self.head_started = if self.inbuf.is_empty() { None } else { Some(Instant::now()) };
            let head = String::from_utf8_lossy(&head);
            let (resp, head_only, close) = answer(&head, handler);
            self.respond(&resp, head_only, close || (self.eof && self.inbuf.is_empty()));
            self.flush();
        }
    }
}

/// One request head → (response, HEAD?, close after?).
fn answer(head: &str, handler: &mut dyn FnMut(&str) -> Response) -> (Response, bool, bool) {
    let mut lines = head.split("\r\n");
    let mut words = lines.next().unwrap_or("").split_whitespace();
    let (method, target, version) = (words.next(), words.next(), words.next());
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return (Response::new(400, "text/plain", "bad request line\n"), false, true);
    };
    let mut close = version == "HTTP/1.0";
    for l in lines {
        let Some((k, v)) = l.split_once(':') else { continue };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        match k.as_str() {
            "connection" if v == "close" => close = true,
            "connection" if v == "keep-alive" => close = false,
            // No request has a body here: one would be read as the next request.
            "content-length" if v != "0" => return (Response::new(400, "text/plain", "no bodies\n"), false, true),
            "transfer-encoding" => return (Response::new(400, "text/plain", "no bodies\n"), false, true),
            _ => {}
        }
    }
    let path = target.split('?').next().unwrap_or(target);
    match method {
        "GET" => (handler(path), false, close),
        "HEAD" => (handler(path), true, close),
        _ => (Response::new(405, "text/plain", "GET only\n"), false, close),
    }
}

/// Serve `listener` until `stop` (checked at least twice a second), answering each
/// request with `handler(path)`.
pub fn serve(
    listener: TcpListener,
    limits: Limits,
    stop: &AtomicBool,
    handler: &mut dyn FnMut(&str) -> Response,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut conns: Vec<Conn> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let next = conns.iter().map(|c| c.deadline(&limits)).min();
        let wait = next.map_or(Duration::from_millis(500), |d| d.saturating_duration_since(now));
        let wait = wait.min(Duration::from_millis(500));
        let ready: Vec<PollFlags> = {
            let mut fds = Vec::with_capacity(conns.len() + 1);
            fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            for c in &conns {
                let ev = if c.writing() { PollFlags::POLLOUT } else { PollFlags::POLLIN };
                fds.push(PollFd::new(c.stream.as_fd(), ev));
            }
            match poll(&mut fds, PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX)) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            fds.iter().map(|f| f.revents().unwrap_or(PollFlags::empty())).collect()
        };
        for (c, ev) in conns.iter_mut().zip(&ready[1..]) {
            if ev.is_empty() {
                continue;
            }
            if c.writing() {
                c.flush();
            } else {
                c.fill(&limits);
            }
            c.serve(&limits, handler);
            if c.eof && !c.writing() {
                c.dead = true;
            }
        }
        if !ready[0].is_empty() {
            accept(&listener, &mut conns, &limits);
        }
        let now = Instant::now();
        for c in &mut conns {
            if now >= c.deadline(&limits) {
                c.dead = true;
            }
        }
        conns.retain(|c| !c.dead);
    }
    Ok(())
}

/// Take every pending connection; at the cap the one idle the longest makes room.
fn accept(listener: &TcpListener, conns: &mut Vec<Conn>, limits: &Limits) {
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // WouldBlock, or out of descriptors (EMFILE): try again at the next poll.
            Err(_) => return,
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let _ = stream.set_nodelay(true);
        conns.retain(|c| !c.dead);
        if conns.len() >= limits.max_conns.max(1) {
            let idlest = conns.iter().enumerate().filter(|(_, c)| !c.writing()).min_by_key(|(_, c)| c.last_active);
            match idlest {
                Some((i, _)) => {
                    conns.swap_remove(i);
                }
                // Every slot is sending a response: the new one waits for none of them.
                None => continue,
            }
        }
        let now = Instant::now();
        conns.push(Conn {
            stream,
            inbuf: Vec::new(),
            out: Vec::new(),
            sent: 0,
            close_after: false,
            last_active: now,
            head_started: None,
            write_started: now,
            eof: false,
            dead: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn handler(path: &str) -> Response {
        match path {
            "/metrics" => Response::new(200, "text/plain", "up 1\n"),
            _ => Response::new(404, "text/plain", "not found\n"),
        }
    }

    fn server(limits: Limits) -> (u16, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || serve(l, limits, &s, &mut handler).unwrap());
        (port, stop, h)
    }

    fn exchange(port: u16, req: &[u8]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req).unwrap();
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        r
    }

    #[test]
    fn answers_keeps_alive_pipelines_and_refuses_what_it_must() {
        let (port, stop, h) = server(Limits { max_conns: 4, max_head: 256, ..Limits::default() });
        let r = exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 200 OK\r\n") && r.contains("Content-Length: 5\r\n") && r.contains("\r\n\r\nup 1\n"),
            "{r}"
        );
        assert!(r.contains("HTTP/1.1 404 Not Found"), "pipelined second request: {r}");
        let r = exchange(port, format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(400)).as_bytes());
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
        let r = exchange(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = exchange(port, b"HEAD /metrics HTTP/1.0\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\n"), "{r}");
        // Over the cap, idle connections make room: the scrape is answered.
        let idle: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let r = exchange(port, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        drop(idle);
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
    }
}
