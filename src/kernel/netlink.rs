//! A blocking rtnetlink socket (netlink-sys) speaking netlink-packet-route: no async runtime,
//! one socket per user, read with a timeout so the control thread can notice a stop.

use std::io;
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::{nexthop, KernelError};
use crate::route::IfAddr;
use crate::route::KernelEvent;
use crate::wire::MacAddr;

/// Multicast groups of the events the router follows (RTMGRP_*: link, neighbour, IPv4/IPv6
/// addresses and routes; RTNLGRP_NEXTHOP: kernel nexthop objects).
pub const EVENT_GROUPS: u32 = 0x1 | 0x4 | 0x10 | 0x40 | 0x100 | 0x400 | nexthop::GROUP_BIT;

/// The event socket's receive buffer: 32 MiB, or `PFCSWITCH_NETLINK_RCVBUF` bytes (a test
/// knob: a tiny buffer forces overruns, docs/routing.md "Netlink that heals").
pub const RCVBUF_ENV: &str = "PFCSWITCH_NETLINK_RCVBUF";

/// The event socket's receive buffer in bytes ([`RCVBUF_ENV`] or 32 MiB).
pub fn event_rcvbuf() -> usize {
    std::env::var(RCVBUF_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(32 << 20)
}

/// The read buffer a socket starts with; a datagram the kernel had to cut grows it.
const READ_BUF: usize = 1 << 16;
/// The largest read buffer (a netlink datagram is far smaller in practice).
const READ_BUF_MAX: usize = 16 << 20;

/// One message read.
#[derive(Debug)]
pub enum Message {
    /// What netlink-packet-route decodes, with the netlink header's flags.
    Route(RouteNetlinkMessage, u16),
    /// A nexthop object message (which it does not), decoded by [`nexthop::decode`].
    NextHop(KernelEvent),
}

/// What one read returned.
#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// Messages (with their netlink flags), in order; `done` if the answer to our dump or
    /// request with sequence `seq` ended in this read; `skipped`: messages of the datagram
    /// that could not be decoded (left out of `out`).
    Messages { done: Option<u32>, skipped: u32 },
    /// Nothing within the timeout (or nothing now, for a read that does not wait).
    Timeout,
    /// Messages were lost: everything must be dumped again.
    Lost(Loss),
}

/// How messages were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The receive buffer overflowed (ENOBUFS): the kernel dropped events.
    Overrun,
    /// A datagram of `len` bytes did not fit the read buffer (MSG_TRUNC); the buffer has
    /// grown for the next one.
    Truncated { len: usize },
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loss::Overrun => write!(f, "overrun (ENOBUFS): events lost"),
            Loss::Truncated { len } => write!(f, "a {len}-byte datagram was truncated"),
        }
    }
}

/// An rtnetlink socket.
pub struct RtNetlink {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

fn nl_err(e: io::Error) -> KernelError {
    KernelError::Netlink(e.to_string())
}

impl RtNetlink {
    /// A socket for requests and dumps (no events), in the calling thread's namespace.
    pub fn open() -> Result<RtNetlink, KernelError> {
        Self::with_groups(0, 0)
    }

    /// A socket that also receives the router's events ([`EVENT_GROUPS`]). Subscribe before
    /// dumping, so nothing that changes during the dump is missed.
    pub fn subscribe() -> Result<RtNetlink, KernelError> {
        Self::subscribe_with(event_rcvbuf(), READ_BUF)
    }

    /// [`RtNetlink::subscribe`] with a receive buffer of `rcvbuf` bytes and a read buffer
    /// of `read_buf` (a reopened socket keeps what the last one grew to).
    pub fn subscribe_with(rcvbuf: usize, read_buf: usize) -> Result<RtNetlink, KernelError> {
        let mut nl = Self::with_groups(EVENT_GROUPS, rcvbuf)?;
        nl.buf.resize(read_buf.clamp(READ_BUF, READ_BUF_MAX), 0);
        Ok(nl)
    }

    /// The read buffer's size now.
    pub fn read_buf(&self) -> usize {
        self.buf.len()
    }

    fn with_groups(groups: u32, rcvbuf: usize) -> Result<RtNetlink, KernelError> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(nl_err)?;
        sock.bind(&SocketAddr::new(0, groups)).map_err(nl_err)?;
        if groups != 0 {
            // A full table's worth of events can arrive at once (FRR installing 100k
            // routes): take a large buffer, beyond rmem_max when allowed (root).
            let want = rcvbuf;
            if nix::sys::socket::setsockopt(&sock, nix::sys::socket::sockopt::RcvBufForce, &want).is_err() {
                let _ = sock.set_rx_buf_sz(want);
            }
        }
        socket2::SockRef::from(&sock).set_read_timeout(Some(Duration::from_millis(100))).map_err(nl_err)?;
        Ok(RtNetlink { sock, seq: 1, buf: vec![0; READ_BUF] })
    }

    /// Send `msg` with `flags` (NLM_F_REQUEST added); its sequence number.
    pub fn send(&mut self, msg: RouteNetlinkMessage, flags: u16) -> Result<u32, KernelError> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let mut h = NetlinkHeader::default();
        h.flags = NLM_F_REQUEST | flags;
        h.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(h, NetlinkPayload::from(msg));
        m.finalize();
        let mut b = vec![0u8; m.header.length as usize];
        m.serialize(&mut b);
        self.send_bytes(&b)
    }

    /// Send a message netlink-packet-route cannot build: a netlink header (`kind`, `flags`
    /// with NLM_F_REQUEST added) before `payload`; its sequence number.
    fn send_raw(&mut self, kind: u16, flags: u16, payload: &[u8]) -> Result<u32, KernelError> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let mut b = Vec::with_capacity(16 + payload.len());
        b.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        b.extend_from_slice(&self.seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(payload);
        self.send_bytes(&b)
    }

    fn send_bytes(&mut self, b: &[u8]) -> Result<u32, KernelError> {
        // Sent again when a signal interrupted it (EINTR: nothing was sent).
        while let Err(e) = self.sock.send(b, 0) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(nl_err(e));
            }
        }
        Ok(self.seq)
    }

    /// Ask for a dump of links, addresses, neighbours, nexthop objects or routes (both
    /// families).
    pub fn dump(&mut self, what: Dump) -> Result<u32, KernelError> {
        let msg = match what {
            Dump::Links => RouteNetlinkMessage::GetLink(LinkMessage::default()),
            Dump::Addresses => RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            Dump::Neighbours => RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
            Dump::NextHops => return self.send_raw(nexthop::RTM_GETNEXTHOP, NLM_F_DUMP, &nexthop::dump_payload()),
            Dump::Routes => RouteNetlinkMessage::GetRoute(RouteMessage::default()),
        };
        self.send(msg, NLM_F_DUMP)
    }

    /// Read once (up to the 100 ms timeout); decoded messages are appended to `out`. An
    /// error answer to one of our requests is returned as `Err`.
    pub fn recv(&mut self, out: &mut Vec<Message>) -> Result<Received, KernelError> {
        self.recv_flags(out, 0)
    }

    /// [`RtNetlink::recv`] without waiting: [`Received::Timeout`] when nothing is queued.
    pub fn recv_now(&mut self, out: &mut Vec<Message>) -> Result<Received, KernelError> {
        self.recv_flags(out, libc::MSG_DONTWAIT)
    }

    fn recv_flags(&mut self, out: &mut Vec<Message>, flags: i32) -> Result<Received, KernelError> {
        // MSG_TRUNC: the datagram's real length, so a cut one is seen, not parsed short.
        let n = match self.sock.recv(&mut &mut self.buf[..], flags | libc::MSG_TRUNC) {
            Ok(n) if n > self.buf.len() => {
                let grown = n.next_power_of_two().min(READ_BUF_MAX);
                self.buf.resize(grown, 0);
                return Ok(Received::Lost(Loss::Truncated { len: n }));
            }
            Ok(n) => n,
            // A signal delivered to this thread (a handler without SA_RESTART, a profiler
            // such as valgrind's) interrupts recv: nothing was read, read again later.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(Received::Timeout)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => return Ok(Received::Lost(Loss::Overrun)),
            Err(e) => return Err(nl_err(e)),
        };
        let mut off = 0;
        let mut done = None;
        let mut skipped = 0;
        while off + 16 <= n {
            let len = u32::from_ne_bytes([self.buf[off], self.buf[off + 1], self.buf[off + 2], self.buf[off + 3]]);
            let len = len as usize;
            if len < 16 || off + len > n {
                // A header that does not fit: the rest of the datagram is unreadable.
                skipped += 1;
                break;
            }
            let kind = u16::from_ne_bytes([self.buf[off + 4], self.buf[off + 5]]);
            if kind == nexthop::RTM_NEWNEXTHOP || kind == nexthop::RTM_DELNEXTHOP {
                match nexthop::decode(kind == nexthop::RTM_NEWNEXTHOP, &self.buf[off + 16..off + len]) {
                    Ok(ev) => out.push(Message::NextHop(ev)),
                    Err(e) => {
                        log::debug!("rtnetlink: undecodable nexthop message skipped: {e}");
                        skipped += 1;
                    }
                }
                off += (len + 3) & !3;
                continue;
            }
            match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..off + len]) {
                Ok(m) => {
                    let seq = m.header.sequence_number;
                    match m.payload {
                        NetlinkPayload::InnerMessage(inner) => out.push(Message::Route(inner, m.header.flags)),
                        NetlinkPayload::Done(_) => done = Some(seq),
                        NetlinkPayload::Error(e) => match e.code {
                            None => done = Some(seq),
                            Some(_) => return Err(KernelError::Request { op: format!("seq {seq}"), err: e.to_io() }),
                        },
                        NetlinkPayload::Overrun(_) => return Ok(Received::Lost(Loss::Overrun)),
                        _ => {}
                    }
                }
                Err(e) => {
                    log::debug!("rtnetlink: undecodable message skipped: {e}");
                    skipped += 1;
                }
            }
            off += (len + 3) & !3;
        }
        Ok(Received::Messages { done, skipped })
    }

    /// Send a request and wait for its acknowledgement; events read meanwhile are dropped
    /// (use a socket without groups). `ok_errno`: an error code that means "already so".
    fn request(&mut self, op: &str, msg: RouteNetlinkMessage, flags: u16, ok_errno: i32) -> Result<(), KernelError> {
        let seq = self.send(msg, NLM_F_ACK | flags)?;
        let mut sink = Vec::new();
        for _ in 0..50 {
            match self.recv(&mut sink) {
                Ok(Received::Messages { done: Some(s), .. }) if s == seq => return Ok(()),
                Ok(_) => sink.clear(),
                Err(KernelError::Request { err, .. }) if err.raw_os_error() == Some(ok_errno) => return Ok(()),
                Err(KernelError::Request { err, .. }) => return Err(KernelError::Request { op: op.to_string(), err }),
                Err(e) => return Err(e),
            }
        }
        Err(KernelError::Netlink(format!("{op}: no answer within 5 s")))
    }

    /// Every link: (ifindex, name).
    pub fn links(&mut self) -> Result<Vec<(u32, String)>, KernelError> {
        let seq = self.dump(Dump::Links)?;
        let mut msgs = Vec::new();
        let mut links = Vec::new();
        for _ in 0..50 {
            let r = self.recv(&mut msgs)?;
            for m in msgs.drain(..) {
                if let Message::Route(RouteNetlinkMessage::NewLink(l), _) = m {
                    for a in &l.attributes {
                        if let LinkAttribute::IfName(n) = a {
                            links.push((l.header.index, n.clone()));
                        }
                    }
                }
            }
            if matches!(r, Received::Messages { done: Some(s), .. } if s == seq) {
                return Ok(links);
            }
        }
        Err(KernelError::Netlink("link dump: no end within 5 s".into()))
    }

    /// The ifindex of the interface called `name`.
    pub fn link_index(&mut self, name: &str) -> Result<Option<u32>, KernelError> {
        Ok(self.links()?.into_iter().find(|(_, n)| n == name).map(|(i, _)| i))
    }

    /// Set a link's MAC and MTU (when given) and bring it up.
    pub fn set_link(&mut self, ifindex: u32, mac: Option<MacAddr>, mtu: Option<u32>) -> Result<(), KernelError> {
        let mut m = LinkMessage::default();
        m.header.index = ifindex;
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
        if let Some(mac) = mac {
            m.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        }
        if let Some(mtu) = mtu {
            m.attributes.push(LinkAttribute::Mtu(mtu));
        }
        self.request("set link", RouteNetlinkMessage::SetLink(m), 0, 0)
    }

    /// Add an address to a link (already there: fine).
    pub fn add_address(&mut self, ifindex: u32, a: IfAddr) -> Result<(), KernelError> {
        let mut m = AddressMessage::default();
        m.header.index = ifindex;
        m.header.prefix_len = a.len;
        m.header.family = if a.addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
        m.attributes.push(AddressAttribute::Local(a.addr));
        m.attributes.push(AddressAttribute::Address(a.addr));
        self.request(
            &format!("add address {a}"),
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_CREATE | NLM_F_EXCL,
            libc::EEXIST,
        )
    }
}

/// What [`RtNetlink::dump`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dump {
    Links,
    Addresses,
    Neighbours,
    NextHops,
    Routes,
}
