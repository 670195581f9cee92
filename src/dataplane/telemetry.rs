//! The `/pfcswitch/...` DPDK telemetry commands: read-only views of the live counters,
//! watermarks and histograms, safe to run on DPDK's telemetry thread (they read atomics
//! and the latency histograms' mutexes, never the fast path's own state).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::counters::{DropReason, Totals};
use crate::dpdk::{stats_of, telemetry};
use crate::pfc::{PfcPrioStats, PfcTxCounters};

use super::Shared;

/// Everything the commands read.
#[derive(Clone)]
pub struct Views {
    pub shared: Arc<Shared>,
    pub pfc_tx: Vec<Arc<PfcTxCounters>>,
    pub port_ids: Vec<u16>,
    pub tsc_hz: u64,
}

impl Views {
    fn totals(&self) -> Totals {
        Totals::collect(self.shared.counters.iter().map(|c| &**c), self.shared.ports.len())
    }

    pub fn pfc_counters(&self) -> Value {
        let mut m = Map::new();
        for (i, p) in self.shared.ports.iter().enumerate() {
            let s = PfcPrioStats::snapshot(&self.pfc_tx[i], &p.pfc_rx_counters, self.tsc_hz);
            let mut o = Map::new();
            for (n, x) in s.iter().enumerate() {
                o.insert(format!("rx_pfc{n}"), x.rx_pkts().into());
            }
            for (n, x) in s.iter().enumerate() {
                o.insert(format!("tx_pfc{n}"), x.tx_pkts().into());
            }
            for (n, x) in s.iter().enumerate() {
                o.insert(format!("rx_pause{n}"), x.rx_pause.into());
                o.insert(format!("rx_resume{n}"), x.rx_resume.into());
                o.insert(format!("tx_pause{n}"), x.tx_pause.into());
                o.insert(format!("tx_resume{n}"), x.tx_resume.into());
                o.insert(format!("rx_pause_duration_us{n}"), x.rx_pause_duration_us.into());
                o.insert(format!("tx_pause_duration_us{n}"), x.tx_pause_duration_us.into());
                o.insert(format!("tx_on2off{n}"), x.tx_on2off.into());
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn queue_counters(&self) -> Value {
        let t = self.totals();
        let mut m = Map::new();
        for (i, p) in self.shared.ports.iter().enumerate() {
            let pt = &t.ports[i];
            let mut o = Map::new();
            for q in 0..8 {
                o.insert(format!("UC{q}_packets"), pt.queue_tx_packets[q].into());
                o.insert(format!("UC{q}_bytes"), pt.queue_tx_bytes[q].into());
                o.insert(format!("UC{q}_drops"), pt.queue_drops[q].into());
                o.insert(format!("UC{q}_depth"), (self.shared.egress[i].depth(q) as u64).into());
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn pg_watermark(&self) -> Value {
        let mut m = Map::new();
        for (i, p) in self.shared.ports.iter().enumerate() {
            let mut o = Map::new();
            for pg in 0..8u8 {
                let w = self.shared.mmu.pg_watermarks(i as u16, pg);
                let occ = self.shared.mmu.pg_occupancy(i as u16, pg);
                o.insert(format!("PG{pg}_shared_watermark"), w.shared.into());
                o.insert(format!("PG{pg}_headroom_watermark"), w.headroom.into());
                o.insert(format!("PG{pg}_occupancy"), occ.total.into());
                o.insert(format!("PG{pg}_off"), (self.shared.mmu.is_off(i as u16, pg) as u64).into());
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn buffer_pool(&self) -> Value {
        let s = self.shared.mmu.pool_stats();
        json!({
            "ingress_lossless_pool": {
                "size": s.lossless.size,
                "shared_size": s.lossless.shared_size,
                "occupancy": s.lossless.private_used + s.lossless.shared_used + s.lossless.headroom_used,
                "shared_used": s.lossless.shared_used,
                "headroom_used": s.lossless.headroom_used,
                "shared_watermark": s.lossless.shared_watermark,
                "headroom_watermark": s.lossless.headroom_watermark,
                "threshold": self.shared.mmu.threshold(),
            },
            "egress_lossy_pool": {
                "size": s.lossy.size,
                "shared_size": s.lossy.shared_size,
                "occupancy": s.lossy.private_used + s.lossy.shared_used,
                "shared_watermark": s.lossy.shared_watermark,
                "threshold": self.shared.mmu.lossy_threshold(),
            },
        })
    }

    pub fn latency(&self) -> Value {
        let mut m = Map::new();
        for p in &self.shared.ports {
            let mut o = Map::new();
            for (tc, n, p50, p99, p999, max) in p.latency.summary() {
                o.insert(format!("TC{tc}_count"), n.into());
                o.insert(format!("TC{tc}_p50_ns"), p50.into());
                o.insert(format!("TC{tc}_p99_ns"), p99.into());
                o.insert(format!("TC{tc}_p999_ns"), p999.into());
                o.insert(format!("TC{tc}_max_ns"), max.into());
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn port_counters(&self) -> Value {
        let t = self.totals();
        let mut m = Map::new();
        for (i, p) in self.shared.ports.iter().enumerate() {
            let pt = &t.ports[i];
            let pmd = stats_of(self.port_ids[i]);
            let mut o = Map::new();
            o.insert("rx_packets".into(), pt.rx_packets.into());
            o.insert("tx_packets".into(), pt.tx_packets.into());
            o.insert("rx_bytes".into(), pt.rx_bytes.into());
            o.insert("tx_bytes".into(), pt.tx_bytes.into());
            o.insert("imissed".into(), pmd.imissed.into());
            o.insert("rx_nombuf".into(), pmd.rx_nombuf.into());
            for r in DropReason::ALL {
                o.insert(format!("drop_{}", r.as_str()), pt.drop_count(r).into());
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn pfcwd(&self) -> Value {
        let mut m = Map::new();
        for p in &self.shared.ports {
            let mut o = Map::new();
            if let Some(st) = &p.pfcwd {
                st.write_telemetry(&mut o);
            }
            m.insert(p.name.clone(), Value::Object(o));
        }
        Value::Object(m)
    }

    pub fn fdb(&self) -> Value {
        let mut m = Map::new();
        for (i, c) in self.shared.counters.iter().enumerate() {
            m.insert(format!("worker{i}_entries"), c.fdb_entries.get().into());
        }
        Value::Object(m)
    }
}

/// Register every command. Failures are logged, not fatal (telemetry may be disabled
/// with `--no-telemetry`).
pub fn register(v: Views) {
    type F = fn(&Views) -> Value;
    let cmds: [(&str, &str, F); 8] = [
        ("/pfcswitch/pfcwd", "PFC watchdog per port and priority: status, storms detected/restored, drops", Views::pfcwd),
        ("/pfcswitch/pfc_counters", "PFC frames per port and priority (SAI PFC_n_RX/TX_PKTS, durations)", Views::pfc_counters),
        ("/pfcswitch/queue_counters", "Per egress queue packets, bytes, drops, depth", Views::queue_counters),
        ("/pfcswitch/pg_watermark", "Per ingress PG shared/headroom watermarks and occupancy", Views::pg_watermark),
        ("/pfcswitch/buffer_pool", "Buffer pools: occupancy, watermarks, current DT threshold", Views::buffer_pool),
        ("/pfcswitch/latency", "RX to tx_burst latency per port and TC (ns)", Views::latency),
        ("/pfcswitch/port_counters", "Per port packets, bytes and drops by reason", Views::port_counters),
        ("/pfcswitch/fdb", "FDB entries per worker lcore", Views::fdb),
    ];
    for (cmd, help, f) in cmds {
        let v = v.clone();
        if let Err(e) = telemetry::register(cmd, help, move |_params| f(&v)) {
            log::warn!("telemetry: {e}");
        }
    }
}
