//! `pfcswitch thresholds`: where each lossless (port, PG) pauses, resumes and drops.
//!
//! For one (port, PG) at a time, with every other PG idle: a burst of `frame`-byte packets
//! from that ingress into a stalled egress (another port, the PG's queue), admitted one by
//! one by a fresh [`Mmu`] built from the same plan the dataplane runs — the same code path,
//! not a second formula. Reported: the packet whose admission sends PAUSE (the Xoff
//! crossing), the first packet dropped, and, draining the admitted packets in order, how
//! many leave before the PG's RESUME (the Xon point). This is what SONiC operators re-tune
//! by hand per platform; `tests/pfc_exact_counts.rs` checks it against an independent
//! model and against what a running switch does.

use serde_json::{json, Value};

use crate::mmu::{EdgeKind, Mmu, Verdict};
use crate::plan::Plan;

/// The three points of one lossless (port, PG).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgThresholds {
    pub port: String,
    pub pg: u8,
    /// The traffic class (= PFC priority) the burst is sent in, and its egress queue.
    pub tc: u8,
    pub queue: u8,
    /// The stalled egress port.
    pub egress: String,
    /// Frame length, bytes (as received, without FCS).
    pub frame: u32,
    /// 1-based index of the packet whose admission sends PAUSE, and the PG's occupancy
    /// after it.
    pub pause_at: Option<u64>,
    pub pause_bytes: u64,
    /// DSH: the packet whose admission sends the port-level PAUSE (every lossless PG of
    /// the port); after it, arrivals go to the port's insurance headroom.
    pub port_pause_at: Option<u64>,
    /// 1-based index of the first packet dropped, and why.
    pub first_drop: Option<u64>,
    pub drop_reason: Option<&'static str>,
    /// Draining the admitted packets in order: how many leave before RESUME, and the
    /// PG's occupancy then.
    pub xon_after: Option<u64>,
    pub xon_bytes: u64,
}

impl PgThresholds {
    pub fn to_json(&self) -> Value {
        json!({
            "port": self.port, "pg": self.pg, "tc": self.tc, "queue": self.queue, "egress": self.egress,
            "frame_bytes": self.frame, "pause_at": self.pause_at, "pause_occupancy_bytes": self.pause_bytes,
            "port_pause_at": self.port_pause_at,
            "first_drop": self.first_drop, "drop_reason": self.drop_reason,
            "xon_after_drained": self.xon_after, "xon_occupancy_bytes": self.xon_bytes,
        })
    }
}

/// Every lossless (port, PG) of `plan` (port names in `names`, in plan order), optionally
/// only `port` / `pg`. Errors name what was asked for and does not exist.
pub fn compute(
    plan: &Plan,
    names: &[String],
    frame: u32,
    port: Option<&str>,
    pg: Option<u8>,
) -> Result<Vec<PgThresholds>, String> {
    if let Some(p) = port {
        if !names.iter().any(|n| n == p) {
            return Err(format!("--port: no port '{p}' (ports: {})", names.join(", ")));
        }
    }
    let mut out = Vec::new();
    for (i, pp) in plan.ports.iter().enumerate() {
        if port.is_some_and(|p| p != names[i]) {
            continue;
        }
        for g in 0..8u8 {
            if pp.lossless_pgs & (1 << g) == 0 || pg.is_some_and(|want| want != g) {
                continue;
            }
            let Some(tc) = (0..8u8).find(|&t| pp.pfc_mask & (1 << t) != 0 && pp.qos.tc_to_pg[t as usize] & 7 == g)
            else {
                continue;
            };
            let egress = if names.len() > 1 { (i + 1) % names.len() } else { i };
            out.push(one(plan, names, i, g, tc, egress, frame)?);
        }
    }
    if out.is_empty() {
        return Err(match (port, pg) {
            (_, Some(g)) => format!("--pg {g}: not a lossless PG of the selected port(s)"),
            _ => "no lossless (port, PG) in this configuration (pfc_enable and [buffer.pg])".to_string(),
        });
    }
    Ok(out)
}

fn one(
    plan: &Plan,
    names: &[String],
    port: usize,
    pg: u8,
    tc: u8,
    egress: usize,
    frame: u32,
) -> Result<PgThresholds, String> {
    let mmu = Mmu::new(plan.mmu.clone()).map_err(|e| e.to_string())?;
    let queue = plan.ports[port].qos.tc_to_queue[tc as usize] & 7;
    let (p, e) = (port as u16, egress as u16);
    let mut t = PgThresholds {
        port: names[port].clone(),
        pg,
        tc,
        queue,
        egress: names[egress].clone(),
        frame,
        pause_at: None,
        pause_bytes: 0,
        port_pause_at: None,
        first_drop: None,
        drop_reason: None,
        xon_after: None,
        xon_bytes: 0,
    };
    // Bounded: a lossless PG drops once its headroom is full; the bound is only a guard.
    let limit = plan.mmu.max_packets(frame.max(1)).saturating_add(2);
    let mut charges = Vec::new();
    for k in 1..=limit {
        match mmu.admit(p, pg, e, queue, frame, true) {
            Verdict::Admit { charge, edge } => {
                charges.push(charge);
                if t.pause_at.is_none() && edge.is_some_and(|x| x.kind == EdgeKind::Pause && x.pgs & (1 << pg) != 0) {
                    t.pause_at = Some(k);
                    t.pause_bytes = mmu.pg_occupancy(p, pg).total;
                }
                if t.port_pause_at.is_none() && mmu.is_port_off(p) {
                    t.port_pause_at = Some(k);
                }
            }
            Verdict::Drop { reason: r, edge } => {
                // A PG dropped at its Xoff point (its headroom pool was full) pauses too.
                if t.pause_at.is_none() && edge.is_some_and(|x| x.kind == EdgeKind::Pause && x.pgs & (1 << pg) != 0) {
                    t.pause_at = Some(k);
                    t.pause_bytes = mmu.pg_occupancy(p, pg).total;
                }
                t.first_drop = Some(k);
                t.drop_reason = Some(r.as_str());
                break;
            }
        }
    }
    for (j, c) in charges.into_iter().enumerate() {
        // (A DSH port-level RESUME may leave this PG OFF at queue level.)
        if mmu.release(c).is_some_and(|x| x.kind == EdgeKind::Resume && x.pgs & (1 << pg) != 0) {
            t.xon_after = Some(j as u64 + 1);
            t.xon_bytes = mmu.pg_occupancy(p, pg).total;
            break;
        }
    }
    Ok(t)
}

/// The table `pfcswitch thresholds` prints.
pub fn render(rows: &[PgThresholds], policy: &str) -> String {
    let frame = rows.first().map_or(0, |r| r.frame);
    let mut s = format!(
        "{frame}-byte frames from one ingress into a stalled egress, every other PG idle (headroom: {policy}):\n"
    );
    s.push_str(&format!(
        "{:<12} {:>2} {:>2} {:<12} {:>34} {:>30} {:>12}\n",
        "Port", "PG", "TC", "egress", "PAUSE at packet", "RESUME after draining", "first drop"
    ));
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |n| format!("#{n}"));
    for r in rows {
        let pause = match (r.pause_at, r.port_pause_at) {
            (Some(n), Some(pp)) => format!("#{n} ({} B), port #{pp}", r.pause_bytes),
            (Some(n), None) => format!("#{n} ({} B)", r.pause_bytes),
            _ => "-".into(),
        };
        let xon = match r.xon_after {
            Some(n) => format!("{n} packets ({} B left)", r.xon_bytes),
            None => "-".into(),
        };
        s.push_str(&format!(
            "{:<12} {:>2} {:>2} {:<12} {:>34} {:>30} {:>12}\n",
            r.port,
            r.pg,
            r.tc,
            r.egress,
            pause,
            xon,
            opt(r.first_drop)
        ));
    }
    s
}
