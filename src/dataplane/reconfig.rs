//! Live reconfiguration in the running switch (`/pfcswitch/config,<change>`, what
//! `pfcswitch config ...` sends). The telemetry thread makes the change to the running
//! configuration's text and validates it like the file ([`crate::reconfig::apply`]);
//! nothing is applied when that fails. The new MMU limits and egress settings then go to
//! the control lcore, which alone installs them ([`crate::mmu::Mmu::set_limits`]: one
//! swap, so a worker's admission sees the old limits or the new, never a mix; WRED
//! profiles and watchdog settings through [`super::tx_live::TxLive`]) and logs it. Headroom that
//! shrinks is installed in two steps: at once no smaller than before
//! ([`crate::reconfig::interim`]), and the smaller `xoff` once every PG it shrinks is ON
//! and holds no more than that ([`crate::mmu::Mmu::headroom_shrink_safe`]): bytes already
//! on their way to a paused PG keep their place.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mmu::MmuConfig;
use crate::reconfig::{apply, interim, Change};

use super::control::Control;
use super::io::IoMsg;
use super::pfc_live::PfcSet;
use super::reconfig_shared::{Late, Request};
use super::shared::Shared;
use super::tx_live::TxParams;

/// How long the telemetry thread waits for the control lcore (which answers within a
/// millisecond or a nap; a machine whose CPUs are oversubscribed may keep it off its CPU
/// for a while). `pfcswitch config` waits for the reply a little longer.
pub const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Test knobs (docs/lossless.md, "Test knobs"): the milliseconds in `var`, if set.
fn knob_ms(var: &str) -> Option<Duration> {
    std::env::var(var).ok()?.parse().ok().map(Duration::from_millis)
}

/// `/pfcswitch/config,<param>` on the telemetry thread: validate, hand over, wait.
pub fn handle(shared: &Shared, param: &str) -> Result<Value, String> {
    let r = &shared.reconfig;
    let change = Change::parse_param(param)?;
    let mut running = r.running.lock().map_err(|_| "live configuration unavailable (poisoned)".to_string())?;
    let Some((text, n)) = running.as_mut() else {
        return Err(format!("{}: cannot be read again: no live changes", r.origin));
    };
    // A change made to a text that misses one in force would revert it.
    r.settle_late(text, n)?;
    let applied = apply(text, &r.origin, &change, r.sw_response_ns)?;
    let id = *n + 1;
    let tx = applied
        .plan
        .ports
        .iter()
        .zip(&shared.ports)
        .map(|(p, rt)| TxParams {
            wred: p.wred,
            pfcwd: applied.config.pfcwd,
            watch: if rt.obey_8023x { 0xff } else { p.pfc_mask },
        })
        .collect();
    let pfc = applied.plan.ports.iter().map(PfcSet::of).collect();
    r.requests
        .push(Request { id, what: change.describe(), mmu: applied.plan.mmu.clone(), tx, pfc })
        .map_err(|_| "a change is still being applied".to_string())?;
    let start = Instant::now();
    let wait = knob_ms("PFCSW_TEST_ANSWER_WAIT_MS").unwrap_or(ANSWER_WAIT);
    loop {
        if let Some((rid, answer)) = r.replies.pop() {
            if rid != id {
                continue;
            }
            let status = answer?;
            *text = applied.text;
            *n = id;
            return Ok(json!({ "applied": change.describe(), "status": status, "change": id }));
        }
        if start.elapsed() > wait {
            // Take it back if the control lcore never saw it. If it did, the change may be
            // in force: it is kept as late, and the next change or read of the running text
            // waits for its answer (never made to, or reading, a text without it).
            if r.requests.pop().is_some() {
                return Err("the control lcore did not answer: not applied".to_string());
            }
            let late = Late { id, what: change.describe(), text: applied.text };
            *r.late.lock().map_err(|_| "live configuration unavailable (poisoned)".to_string())? = Some(late);
            return Err(format!(
                "the control lcore did not answer in time: change {id} may be in force; `pfcswitch config save` or \
                 the next change says once it answers"
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A change's id and the control lcore's answer to it.
type Reply = (u64, Result<String, String>);

/// The control lcore's side: installs what the telemetry thread validated.
pub struct Reconfigurer {
    /// Headroom waiting to shrink: the limits to install once safe, and the change.
    pending: Option<(MmuConfig, String)>,
    /// Test knob `PFCSW_TEST_REPLY_DELAY_MS`: answers are held this long after the change
    /// is in force (an answer that comes after the telemetry thread stopped waiting).
    reply_delay: Option<Duration>,
    held: Option<(Instant, Reply)>,
}

impl Default for Reconfigurer {
    fn default() -> Self {
        Reconfigurer { pending: None, reply_delay: knob_ms("PFCSW_TEST_REPLY_DELAY_MS"), held: None }
    }
}

impl Reconfigurer {
    /// One pass (the housekeeping pass of the main loop).
    pub fn poll(&mut self, shared: &Shared, control: &mut Control) {
        if let Some(req) = shared.reconfig.requests.pop() {
            // PFC that stops, stops before the limits change (workers treat the priority
            // as lossy from their next burst); PFC that starts, after (its PG has its
            // headroom before any packet is admitted as lossless).
            let old: Vec<PfcSet> = shared.ports.iter().map(|rt| rt.pfc.get()).collect();
            for ((rt, o), n) in shared.ports.iter().zip(&old).zip(&req.pfc) {
                rt.pfc.set(o.meet(n));
            }
            let answer = self.install(shared, req.mmu, &req.what);
            for (port, ((rt, o), n)) in shared.ports.iter().zip(&old).zip(&req.pfc).enumerate() {
                if answer.is_err() {
                    rt.pfc.set(*o);
                    continue;
                }
                rt.pfc.set(*n);
                let (stopped, lossy) = (o.pfc_mask & !n.pfc_mask, o.lossless_pgs & !n.lossless_pgs);
                if stopped | lossy != 0 {
                    control.pfc_stopped(port, stopped, lossy);
                }
            }
            if answer.is_ok() {
                for (rt, p) in shared.ports.iter().zip(req.tx) {
                    rt.tx_live.publish(p);
                }
            }
            match self.reply_delay {
                Some(d) => self.held = Some((Instant::now() + d, (req.id, answer))),
                None => {
                    let _ = shared.reconfig.replies.push((req.id, answer));
                }
            }
        }
        if self.held.as_ref().is_some_and(|(at, _)| Instant::now() >= *at) {
            if let Some((_, reply)) = self.held.take() {
                let _ = shared.reconfig.replies.push(reply);
            }
        }
        if let Some((cfg, what)) = self.pending.take() {
            if shared.mmu.headroom_shrink_safe(&cfg) {
                match shared.mmu.set_limits(cfg) {
                    Ok(()) => log(shared, log::Level::Info, format!("config: {what}: smaller headroom now in force")),
                    Err(e) => log(shared, log::Level::Warn, format!("config: {what}: headroom not shrunk: {e}")),
                }
            } else {
                self.pending = Some((cfg, what));
            }
        }
    }

    fn install(&mut self, shared: &Shared, new: MmuConfig, what: &str) -> Result<String, String> {
        // A newer change was made to a text holding the older one: it replaces a pending shrink.
        self.pending = None;
        let mmu = &shared.mmu;
        if mmu.headroom_shrink_safe(&new) {
            mmu.set_limits(new).map_err(|e| e.to_string())?;
            log(shared, log::Level::Info, format!("config: {what}: applied"));
            return Ok("applied".into());
        }
        mmu.set_limits(interim(&mmu.config(), &new)).map_err(|e| e.to_string())?;
        log(
            shared,
            log::Level::Info,
            format!("config: {what}: applied; headroom shrinks once its paused PGs have drained"),
        );
        self.pending = Some((new, what.to_string()));
        Ok("applied; headroom shrinks once its paused PGs have drained".into())
    }
}

fn log(shared: &Shared, level: log::Level, text: String) {
    shared.io.send(IoMsg::Log(level, text));
}
