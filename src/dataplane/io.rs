//! Printing and file writing, off the lcores. The control lcore (live counters, the
//! timeline, log lines) and the workers (watchdog storms) hand what they want written to
//! an ordinary thread through a bounded queue. Writing may block — stdout a pipe nobody
//! reads, a stalled disk — but only that thread waits: PAUSE refreshes and RESUMEs never
//! do. When the queue is full a message is dropped and counted (`io_dropped` in the stats
//! JSON), never waited for.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;

/// Messages the queue holds: about a second of live lines at 1 ms, or 64 MiB of timeline.
pub const IO_QUEUE_LEN: usize = 1024;

/// Something to write.
pub enum IoMsg {
    /// A line for standard output (without its newline).
    Stdout(String),
    /// Rows for the timeline file (whole lines).
    Timeline(String),
    /// A watchdog transition on `port` (priority masks); formatted by the I/O thread so
    /// the worker that saw it formats nothing.
    Storm { port: usize, detected: u8, restored: u8, action: &'static str },
    /// A log record.
    Log(log::Level, String),
}

/// Messages dropped because the I/O thread was behind, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IoDropped {
    pub stdout_lines: u64,
    pub timeline_chunks: u64,
    pub log_lines: u64,
}

/// The producers' end: any thread may send.
pub struct IoSink {
    queue: ArrayQueue<IoMsg>,
    stdout_lines: AtomicU64,
    timeline_chunks: AtomicU64,
    log_lines: AtomicU64,
}

impl Default for IoSink {
    fn default() -> Self {
        IoSink::new(IO_QUEUE_LEN)
    }
}

impl IoSink {
    pub fn new(capacity: usize) -> IoSink {
        IoSink {
            queue: ArrayQueue::new(capacity.max(1)),
            stdout_lines: AtomicU64::new(0),
            timeline_chunks: AtomicU64::new(0),
            log_lines: AtomicU64::new(0),
        }
    }

    /// Queue `msg`, or drop and count it if the queue is full. Never blocks.
    pub fn send(&self, msg: IoMsg) {
        if let Err(msg) = self.queue.push(msg) {
            self.count_dropped(&msg);
        }
    }

    fn count_dropped(&self, msg: &IoMsg) {
        let c = match msg {
            IoMsg::Stdout(_) => &self.stdout_lines,
            IoMsg::Timeline(_) => &self.timeline_chunks,
            IoMsg::Storm { .. } | IoMsg::Log(..) => &self.log_lines,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dropped(&self) -> IoDropped {
        IoDropped {
            stdout_lines: self.stdout_lines.load(Ordering::Relaxed),
            timeline_chunks: self.timeline_chunks.load(Ordering::Relaxed),
            log_lines: self.log_lines.load(Ordering::Relaxed),
        }
    }
}

/// The writing thread.
pub struct IoThread {
    sink: Arc<IoSink>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// The I/O thread's poll interval: 1 ms while messages come, at most 8 ms when idle (the
/// queue holds 1024 messages: a timeline sampled every 10 µs fills it in 10 ms).
const IDLE_POLL_MIN: Duration = Duration::from_millis(1);
const IDLE_POLL_MAX: Duration = Duration::from_millis(8);

/// How long `finish` waits for the thread to write what is queued. A thread stuck on a
/// pipe nobody reads is left behind (the process is about to exit).
const FINISH_WAIT: Duration = Duration::from_secs(2);

impl IoThread {
    /// Start the thread; `timeline` is the timeline file (its header already written),
    /// `port_names` name ports in watchdog messages.
    pub fn spawn(
        sink: Arc<IoSink>,
        timeline: Option<BufWriter<File>>,
        port_names: Vec<String>,
    ) -> std::io::Result<IoThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (s, st, dn) = (sink.clone(), stop.clone(), done.clone());
        let handle = std::thread::Builder::new().name("pfcsw-io".into()).spawn(move || {
            let mut w = Writer { timeline, port_names, timeline_failed: false };
            // Polls every millisecond while messages come, backing off to IDLE_POLL_MAX when
            // none do (an idle switch wakes this thread ~125 times a second, not 1000).
            let mut wait = IDLE_POLL_MIN;
            loop {
                match s.queue.pop() {
                    Some(msg) => {
                        w.write(msg);
                        wait = IDLE_POLL_MIN;
                    }
                    None if st.load(Ordering::Acquire) => break,
                    None => {
                        std::thread::sleep(wait);
                        wait = (wait * 2).min(IDLE_POLL_MAX);
                    }
                }
            }
            w.finish();
            dn.store(true, Ordering::Release);
        })?;
        Ok(IoThread { sink, stop, done, handle })
    }

    /// Write what is queued and stop. If the thread cannot finish in time (its output
    /// blocks), it is left behind and what it still had is counted as dropped.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Release);
        let until = Instant::now() + FINISH_WAIT;
        while !self.done.load(Ordering::Acquire) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.done.load(Ordering::Acquire) {
            let _ = self.handle.join();
        } else {
            while let Some(msg) = self.sink.queue.pop() {
                self.sink.count_dropped(&msg);
            }
            log::warn!("output: the I/O thread is blocked (stdout or the timeline not being read?); left behind");
        }
    }
}

struct Writer {
    timeline: Option<BufWriter<File>>,
    port_names: Vec<String>,
    timeline_failed: bool,
}

impl Writer {
    fn write(&mut self, msg: IoMsg) {
        match msg {
            IoMsg::Stdout(line) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}").and_then(|_| out.flush());
            }
            IoMsg::Timeline(rows) => {
                if let (Some(f), false) = (self.timeline.as_mut(), self.timeline_failed) {
                    if let Err(e) = f.write_all(rows.as_bytes()) {
                        log::warn!("timeline: {e}; no more rows are written");
                        self.timeline_failed = true;
                    }
                }
            }
            IoMsg::Storm { port, detected, restored, action } => {
                let name = self.port_names.get(port).map_or("?", String::as_str);
                if detected != 0 {
                    log::warn!("pfcwd: storm detected on {name} priorities {detected:#04x} (action {action})");
                }
                if restored != 0 {
                    log::info!("pfcwd: storm restored on {name} priorities {restored:#04x}");
                }
            }
            IoMsg::Log(level, text) => log::log!(level, "{text}"),
        }
    }

    fn finish(&mut self) {
        if let (Some(f), false) = (self.timeline.as_mut(), self.timeline_failed) {
            if let Err(e) = f.flush() {
                log::warn!("timeline: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_queue_drops_and_counts_by_kind() {
        let s = IoSink::new(2);
        s.send(IoMsg::Stdout("a".into()));
        s.send(IoMsg::Timeline("b\n".into()));
        s.send(IoMsg::Stdout("c".into()));
        s.send(IoMsg::Timeline("d\n".into()));
        s.send(IoMsg::Log(log::Level::Info, "e".into()));
        s.send(IoMsg::Storm { port: 0, detected: 1, restored: 0, action: "drop" });
        assert_eq!(s.dropped(), IoDropped { stdout_lines: 1, timeline_chunks: 1, log_lines: 2 });
    }

    #[test]
    fn thread_writes_the_timeline_and_finishes() {
        let path = std::env::temp_dir().join(format!("pfcsw-io-unit-{}.csv", std::process::id()));
        let f = BufWriter::new(File::create(&path).unwrap());
        let sink = Arc::new(IoSink::default());
        let t = IoThread::spawn(sink.clone(), Some(f), vec!["Ethernet0".into()]).unwrap();
        for i in 0..100 {
            sink.send(IoMsg::Timeline(format!("{i}\n")));
        }
        t.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 100);
        assert_eq!(sink.dropped(), IoDropped::default());
        std::fs::remove_file(&path).unwrap();
    }
}
