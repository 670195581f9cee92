//! Live reconfiguration under a lossless incast (docs/live-config.md): two pfcgen streams
//! of PCP 3 (they obey PFC) meet in the switch and leave through one port shaped to the
//! rate of one, every link net_memif; while the switch pauses them, `pfcswitch config`
//! changes the lossless profile's `dynamic_th` and both senders' cable length back and
//! forth. Then: every change applied and logged, the buffer's shared size follows the
//! headroom the cable length gives, a bad change refused in one line with nothing applied,
//! `config save` writes a file `check-config` accepts with the last values; and, over the
//! whole run, 0 lossless drops, 0 frames lost, reordered or duplicated, conservation.
//!
//! Beside a busy process (docs/testing.md) the senders run until the test stops them (not
//! for a fixed count the switch may outlast), the CLI's answers may take seconds, and
//! lossless drops are allowed only where the switch recorded an lcore away longer than the
//! 80 ms its headroom covers, each then lost by exactly that sender.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RX_MAC: &str = "02:00:00:00:00:c2";
/// Changes of each kind: at least MIN_ROUNDS, and more until CHANGE_FOR has passed, at most ROUNDS.
const ROUNDS: usize = 100;
const MIN_ROUNDS: usize = 10;
const CHANGE_FOR: Duration = Duration::from_secs(7);
/// What the headroom covers of the switch's reaction (`sw_response`).
const HEADROOM_COVERS_NS: u64 = 80_000_000;

fn switch_config(d: &TestDir) -> std::path::PathBuf {
    let memif = |i: u32, s: &str| format!("net_memif{i},role=server,id=0,socket={}", d.join(s).display());
    let port = |name: &str, dev: String| {
        Port::new(name, &dev)
            .speed("100M")
            .mtu(9100)
            .set("cable_length", "\"5m\"")
            .set("trust", "\"pcp\"")
            .pfc_enable(&[3])
    };
    // Headroom computed (no xoff): sw_response 80 ms at 100 Mb/s gives ~1 MB per PG, room
    // for what a switch descheduled on a loaded machine finds in its RX and memif rings.
    SwitchConfig::new(&d.prefix(), "0@0,1@1")
        .memory_mb(512)
        .toml("[switch]\nrx_ring_size = 256\ntx_ring_size = 512\nmbuf_count = 16383\nsw_response = \"80ms\"")
        .port(port("Ethernet0", memif(0, "a0.sock")))
        .port(port("Ethernet4", memif(1, "a1.sock")))
        .port(port("Ethernet8", memif(2, "b.sock")).set("shaper_rate", "\"30M\""))
        .toml(&computed_headroom_buffer(&["Ethernet0", "Ethernet4", "Ethernet8"]))
        .lcores_set("worker_idle", "\"adaptive\"")
        .one_worker()
        .write(&d.join("sw.toml"))
}

fn gen_config(d: &TestDir) -> std::path::PathBuf {
    let memif = |i: u32, s: &str| format!("net_memif{i},role=client,id=0,socket={}", d.join(s).display());
    let stream = |i: u32, port: &str| {
        format!(
            "[[stream]]\nname = \"s{i}\"\nport = \"{port}\"\nrate = \"30Mbit/s\"\nsize = 1000\npcp = 3\nvlan = 100\n\
             src_mac = \"02:00:00:00:00:a{i}\"\ndst_mac = \"{RX_MAC}\"\nsrc_ip = \"10.0.0.{}\"\ndst_ip = \"10.0.1.1\"\n\
             start = \"300ms\"\n",
            i + 1
        )
    };
    let p = d.join("gen.toml");
    std::fs::write(
        &p,
        format!(
            "[eal]\nargs = [\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--lcores=0@1\", \"--file-prefix={}-gen\"]\n\
             [[port]]\nname = \"g0\"\ndevargs = \"{}\"\nspeed = \"100M\"\n\
             [[port]]\nname = \"g1\"\ndevargs = \"{}\"\nspeed = \"100M\"\n\
             [[port]]\nname = \"g2\"\ndevargs = \"{}\"\nspeed = \"100M\"\n{}{}\
             [[stream]]\nname = \"learn\"\nport = \"g2\"\nrate = \"100pps\"\ncount = 3\nsrc_mac = \"{RX_MAC}\"\npcp = 1\nvlan = 100\n",
            d.prefix(),
            memif(0, "a0.sock"),
            memif(1, "a1.sock"),
            memif(2, "b.sock"),
            stream(0, "g0"),
            stream(1, "g1"),
        ),
    )
    .unwrap();
    p
}

/// A change that failed: the switch's log with it.
fn fail(sw: RunningSwitch, o: &std::process::Output) -> ! {
    let what = common::show(o);
    panic!("pfcswitch config failed: {what}\n--- switch ---\n{}", sw.stop());
}

/// `pfcswitch show --prefix P --json <view…>` (Null when it cannot be read).
fn show_json(prefix: &str, view: &[&str]) -> serde_json::Value {
    let o = Command::new(BIN).args(["show", "--prefix", prefix, "--json"]).args(view).output().unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

/// pfcgen `run --config cfg <args>`, its stderr in `gen.stderr`, killed on drop.
fn pfcgen(d: &TestDir, cfg: &std::path::Path, args: &[&str]) -> Proc {
    Proc(
        Command::new(GEN_BIN)
            .args(["run", "--config", cfg.to_str().unwrap()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(d.join("gen.stderr")).unwrap()))
            .spawn()
            .unwrap(),
    )
}

/// The incast's pfcgen: both senders until [`stop_incast`], 3 s to drain, its summary in
/// `gen.json`.
fn incast(d: &TestDir) -> (Proc, std::path::PathBuf) {
    let gen_json = d.join("gen.json");
    let args = ["--drain", "3s", "--stats-json", gen_json.to_str().unwrap()];
    (pfcgen(d, &gen_config(d), &args), gen_json)
}

/// SIGINT to the incast's pfcgen (it stops sending and drains), its exit asserted.
fn stop_incast(d: &TestDir, gen: &mut Proc) {
    assert!(Command::new("kill").args(["-INT", &gen.0.id().to_string()]).status().unwrap().success());
    let st = gen.0.wait().unwrap();
    assert!(st.success(), "pfcgen: {st}\n{}", std::fs::read_to_string(d.join("gen.stderr")).unwrap_or_default());
}

/// A sender's stream in pfcgen's summary: every frame sent received, in order, once,
/// but those the switch counted as lossless drops on its ingress port (`drops`).
fn assert_stream(gen_json: &std::path::Path, name: &str, drops: u64) -> u64 {
    let g = read_json(gen_json);
    let st = g["streams"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap();
    let tx = u(&st["tx_packets"]);
    assert!(tx > 0, "{name}: nothing sent");
    assert_eq!(
        (u(&st["rx_packets"]), u(&st["lost"]), u(&st["reordered"]), u(&st["duplicates"])),
        (tx - drops, drops, 0, 0),
        "{name}: received / lost / reordered / duplicated of {tx} sent ({drops} lossless drops at its ingress)"
    );
    tx
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn dynamic_th_and_cable_length_change_under_a_lossless_incast() {
    let d = TestDir::new("livecfg");
    let prefix = d.prefix();
    let cfg = switch_config(&d);
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "120"]);
    sw.wait_forwarding(Duration::from_secs(30));
    let config = |args: &[&str]| Command::new(BIN).args(["config", "--prefix", &prefix]).args(args).output().unwrap();
    let shared_size = || u(&show_json(&prefix, &["buffer", "pool"])["ingress_lossless_pool"]["shared_size"]);
    let bs_5m = shared_size();

    let (mut gen, gen_json) = incast(&d);
    // Once the switch pauses the senders, change and change back until the traffic ends.
    let t0 = Instant::now();
    let paused = || show_json(&prefix, &["pfc", "counters"])["Ethernet0"]["tx_pause3"].as_u64().unwrap_or(0) > 0;
    while !paused() {
        assert!(t0.elapsed() < Duration::from_secs(30), "no PAUSE from the switch");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mut rounds, mut bs_300m) = (0, 0);
    while rounds < ROUNDS && (rounds < MIN_ROUNDS || t0.elapsed() < CHANGE_FOR) {
        let (th, len) = if rounds % 2 == 0 { ("1", "300m") } else { ("-3", "5m") };
        let o = config(&["buffer", "profile", "pg_lossless_profile", "--dynamic-th", th]);
        if !o.status.success() {
            fail(sw, &o);
        }
        for p in ["Ethernet0", "Ethernet4"] {
            let o = config(&["interface", "cable-length", p, len]);
            if !o.status.success() {
                fail(sw, &o);
            }
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains(&format!("port {p} cable_length = {len}")), "{out}");
        }
        if rounds == 0 {
            bs_300m = shared_size();
        }
        rounds += 1;
    }
    assert!(gen.0.try_wait().unwrap().is_none(), "the senders ended before the test stopped them");
    // End on 300 m (the shrink back to 5 m may wait for PGs to drain) and dynamic_th -3
    // (a small buffer: what the switch holds drains before the generator's 3 s are up).
    for args in [
        &["buffer", "profile", "pg_lossless_profile", "--dynamic-th", "-3"][..],
        &["interface", "cable-length", "Ethernet0", "300m"],
        &["interface", "cable-length", "Ethernet4", "300m"],
    ] {
        assert!(config(args).status.success());
    }
    // 300 m of cable needs more headroom than 5 m: the shared buffer is smaller by it.
    assert!(bs_300m < bs_5m, "shared size {bs_300m} at 300 m, {bs_5m} at 5 m");
    assert_eq!(shared_size(), bs_300m);

    // A bad change: one line naming the field, exit 2, nothing applied.
    let bad = config(&["buffer", "profile", "pg_lossless_profile", "--dynamic-th", "9"]);
    let err = String::from_utf8_lossy(&bad.stderr).trim().to_string();
    assert_eq!(bad.status.code(), Some(2), "{}", common::show(&bad));
    assert!(err.contains("buffer.profile.pg_lossless_profile.dynamic_th") && !err.contains('\n'), "{err}");
    let bad = config(&["interface", "cable-length", "Ethernet0", "5parsecs"]);
    let err = String::from_utf8_lossy(&bad.stderr).trim().to_string();
    assert_eq!(bad.status.code(), Some(2), "{}", common::show(&bad));
    assert!(err.contains("port[0].cable_length") && !err.contains('\n'), "{err}");
    assert_eq!(shared_size(), bs_300m, "nothing applied");

    // The running configuration, saved, is a valid file with the last values.
    let saved = d.join("saved.toml");
    let o = config(&["save", saved.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::show(&o));
    let c = pfcswitch::config::load(&saved).unwrap();
    assert!(c.ports.iter().take(2).all(|p| p.cable_length_m == 300.0), "{:?}", c.ports);
    assert!(std::fs::read_to_string(&saved).unwrap().contains("dynamic_th = -3"));

    stop_incast(&d, &mut gen);
    let log = sw.stop();
    let s = read_json(&json);
    assert_conserved(&s);
    let drops = assert_lossless_unless_away(&s, HEADROOM_COVERS_NS, &log);
    let sent = assert_stream(&gen_json, "s0", drops["Ethernet0"]) + assert_stream(&gen_json, "s1", drops["Ethernet4"]);
    let applied = log.matches(": applied").count();
    assert!(applied >= 3 * rounds, "{applied} changes logged for {rounds} rounds:\n{log}");
    // Shrinks of the headroom of a PG that was paused at the time: installed in two steps
    // (the second unless a newer change replaced it first).
    let deferred = log.matches("headroom shrinks once").count();
    let completed = log.matches("smaller headroom now in force").count();
    assert!(completed <= deferred, "{completed} shrinks completed, {deferred} deferred:\n{log}");
    eprintln!(
        "live config: {rounds} rounds (dynamic_th -3 <-> 1, cable 5 m <-> 300 m on 2 ports) in {:.1} s under \
         incast ({deferred} headroom shrinks deferred while a PG was paused, {completed} completed before the next change); shared size {bs_5m} B at 5 m, \
         {bs_300m} B at 300 m; {sent} frames, lossless drops {drops:?}",
        t0.elapsed().as_secs_f64()
    );
}

/// Frames of the threshold test: 1000 bytes as received (pfcgen's `size` counts the FCS).
const FRAME: u64 = 1000;
/// When pfcgen sends the frame that crosses the threshold: late enough that a loaded
/// machine has started pfcgen, received the others and looked (the test checks it did).
const AT_S: &str = "20s";

/// `pfcswitch thresholds` on the running configuration, saved: (PAUSE at packet #, first
/// drop at packet #) for Ethernet0's PG 3 and 1000-byte frames.
fn thresholds(file: &std::path::Path) -> (u64, u64) {
    let o = run_switch(&[
        "thresholds",
        "--config",
        file.to_str().unwrap(),
        "--port",
        "Ethernet0",
        "--pg",
        "3",
        "--frame-size",
        &FRAME.to_string(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", common::show(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (u(&v[0]["pause_at"]), u(&v[0]["first_drop"]))
}

/// After live changes of the lossless profile (`--dynamic-th`, `--xoff`, `--size`), the
/// WRED profile and the watchdog, `pfcswitch thresholds` run on what `config save` wrote
/// names the packet at which the running switch now pauses: a PFC-obeying sender (pfcgen,
/// net_memif) sends one frame less, and no PAUSE leaves; one more, and it does. The
/// egress port does not transmit (`tx_enable = false`), so every frame stays in the PG.
#[test]
fn thresholds_of_the_saved_configuration_are_where_pause_now_happens() {
    let d = TestDir::new("livethr");
    let prefix = d.prefix();
    let memif = |i: u32, role: &str| {
        format!("net_memif{i},role={role},id=0,socket={}", d.join(&format!("t{i}.sock")).display())
    };
    let cfg = SwitchConfig::new(&prefix, "0@0,1@1")
        .port(Port::new("Ethernet0", &memif(0, "server")).speed("100M").pfc_enable(&[3, 4]))
        .port(Port::new("Ethernet4", &memif(1, "server")).speed("100M").pfc_enable(&[3, 4]).set("tx_enable", "false"))
        .toml(&pcap_pair_buffer(&EXACT_PROFILE))
        .toml(
            "[qos.wred_profile.W]\ngreen_min_threshold = 1000000\ngreen_max_threshold = 2000000\n\
             green_drop_probability = 100\necn = \"ecn_all\"\n\
             [qos.queue]\n\"Ethernet4|3\" = { wred_profile = \"W\" }\n\
             [pfcwd]\naction = \"drop\"\ndetection_time = 200\nrestoration_time = 200\n",
        )
        .one_worker()
        .write(&d.join("sw.toml"));
    let before = thresholds(&cfg);
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "300"]);
    sw.wait_forwarding(Duration::from_secs(30));
    let config = |args: &[&str]| Command::new(BIN).args(["config", "--prefix", &prefix]).args(args).output().unwrap();
    for args in [
        &["buffer", "profile", "pg_lossless", "--dynamic-th", "-1", "--xoff", "12000", "--size", "2000"][..],
        &["wred", "W", "--green-min-threshold", "0", "--green-max-threshold", "1"],
        &["pfcwd", "--action", "forward", "--detection-time", "400"],
    ] {
        let o = config(args);
        if !o.status.success() {
            fail(sw, &o);
        }
        assert!(String::from_utf8_lossy(&o.stdout).contains(": applied"), "{}", common::show(&o));
    }
    // Refused in one line, nothing applied: a key that is not live, a watchdog value out
    // of SONiC's range.
    for (args, field) in [
        (&["buffer", "profile", "pg_lossless"][..], "nothing to change"),
        (&["pfcwd", "--detection-time", "50"], "pfcwd.detection_time"),
        (&["wred", "nope", "--ecn", "ecn_all"], "qos.wred_profile.nope"),
    ] {
        let o = config(args);
        let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::show(&o));
        assert!(err.contains(field) && !err.contains('\n'), "{args:?}: {err}");
    }
    // The watchdog in force is the changed one.
    let v = show_json(&prefix, &["pfcwd", "stats"]);
    assert_eq!(
        (v["Ethernet0"]["action"].as_str(), u(&v["Ethernet0"]["detection_time_ms"])),
        (Some("forward"), 400),
        "{v}"
    );

    let saved = d.join("saved.toml");
    assert!(config(&["save", saved.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&saved).unwrap();
    for want in ["dynamic_th = -1", "xoff = 12000", "green_min_threshold = 0", "action = \"forward\""] {
        assert!(text.contains(want), "{want} not in the saved configuration:\n{text}");
    }
    let (pause_at, first_drop) = thresholds(&saved);
    assert_ne!((pause_at, first_drop), before, "the changes moved neither point");

    // pause_at − 1 frames, then (seconds later) one more; priority 3 by DSCP.
    let stream = |name: &str, count: u64, start: &str| {
        format!(
            "[[stream]]\nname = \"{name}\"\nport = \"g0\"\nrate = \"1000pps\"\nsize = {}\ncount = {count}\ndscp = 3\necn = \"ect0\"\n\
             src_mac = \"02:00:00:00:00:a1\"\ndst_mac = \"02:00:00:00:00:b1\"\nsrc_ip = \"10.0.0.1\"\ndst_ip = \"10.0.0.2\"\n\
             start = \"{start}\"\n",
            FRAME + 4
        )
    };
    let gen_cfg = d.join("gen.toml");
    std::fs::write(
        &gen_cfg,
        format!(
            "[eal]\nargs = [\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--lcores=0@1\", \"--file-prefix={prefix}-gen\"]\n\
             [[port]]\nname = \"g0\"\ndevargs = \"{}\"\nspeed = \"100M\"\n[[port]]\nname = \"g1\"\ndevargs = \"{}\"\nspeed = \"100M\"\n{}{}",
            memif(0, "client"),
            memif(1, "client"),
            stream("below", pause_at - 1, "300ms"),
            stream("at", 1, AT_S),
        ),
    )
    .unwrap();
    // The generator stays (its links up) until dropped: its streams end at AT_S, and with the
    // default 500 ms drain it would leave then, its link down flushing the held frames
    // before the test's SIGUSR1 (late by a few `show` calls, more on a loaded machine).
    let gen = pfcgen(&d, &gen_cfg, &["--duration", "300", "--drain", "300s"]);
    let gen_started = Instant::now();
    let counters = || {
        let get = |view: &[&str]| show_json(&prefix, view);
        let pause = get(&["pfc", "counters"])["Ethernet0"]["tx_pause3"].as_u64().unwrap_or(0);
        let rx = get(&["interfaces", "counters"])["Ethernet0"]["rx_packets"].as_u64().unwrap_or(0);
        (rx, pause)
    };
    let wait_rx = |n: u64| {
        let t0 = Instant::now();
        while counters().0 < n {
            assert!(t0.elapsed() < Duration::from_secs(120), "Ethernet0 received {:?} of {n}", counters());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_rx(pause_at - 1);
    // Time for a PAUSE to leave if one were due.
    std::thread::sleep(Duration::from_millis(500));
    let (rx, pause) = counters();
    // The "at" frame leaves at AT_S of pfcgen's time, which began after gen_started.
    assert!(
        gen_started.elapsed().as_secs_f64() < AT_S.trim_end_matches('s').parse::<f64>().unwrap(),
        "the machine was too slow to look before the last frame was due ({:.1} s)",
        gen_started.elapsed().as_secs_f64()
    );
    assert_eq!((rx, pause), (pause_at - 1, 0), "(received, PAUSE frames) one frame short of packet #{pause_at}");
    wait_rx(pause_at);
    let t0 = Instant::now();
    while counters().1 == 0 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no PAUSE at packet #{pause_at}: {:?}", counters());
        std::thread::sleep(Duration::from_millis(50));
    }
    // TX on: the held frames leave queue 3 of Ethernet4, whose WRED profile now marks
    // every ECT packet (the file's thresholds, 1 MB, would mark none of these ~24 KB).
    assert!(Command::new("kill").args(["-USR1", &sw.child.id().to_string()]).status().unwrap().success());
    // Wait for them to leave while the receiver is still there (its link up).
    let t0 = Instant::now();
    let sent = || show_json(&prefix, &["queue", "counters"])["Ethernet4"]["UC3_packets"].as_u64().unwrap_or(0);
    while sent() < pause_at {
        assert!(t0.elapsed() < Duration::from_secs(60), "queue 3 of Ethernet4 sent {} of {pause_at}", sent());
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(gen);
    let log = sw.stop();
    let s = read_json(&json);
    assert_conserved(&s);
    assert_eq!(u(&s["ports"][0]["lossless_drops"]), 0, "{log}");
    let e4 = s["ports"].as_array().unwrap().iter().find(|p| p["name"] == "Ethernet4").unwrap();
    let q3 = &e4["queues"][3];
    assert_eq!(
        (u(&q3["tx_packets"]), u(&q3["ecn_marked_packets"])),
        (pause_at, pause_at),
        "queue 3 of Ethernet4: {q3}"
    );
    eprintln!(
        "thresholds of the saved configuration: PAUSE at packet #{pause_at} (was #{} before the changes), \
         first drop at #{first_drop}; the running switch paused exactly there",
        before.0
    );
}

/// `config pfc` under the same lossless incast: PFC taken off the first sender's port
/// (`--enable none`) stops its PAUSE frames there while the other sender's port keeps
/// pausing; given back (`--enable 3`), that port pauses again. The other stream stays
/// lossless throughout (0 lost); no packet admitted as lossless is ever dropped;
/// `config save` holds the last set; conservation.
#[test]
fn pfc_enable_changes_live_under_a_lossless_incast() {
    let d = TestDir::new("livepfc");
    let prefix = d.prefix();
    let cfg = switch_config(&d);
    let json = d.join("stats.json");
    let mut sw = RunningSwitch::spawn(&cfg, &json, &["--duration", "120"]);
    sw.wait_forwarding(Duration::from_secs(30));
    let config = |args: &[&str]| Command::new(BIN).args(["config", "--prefix", &prefix]).args(args).output().unwrap();
    let (mut gen, gen_json) = incast(&d);
    // (PAUSE, RESUME) frames of priority 3 sent on Ethernet0 and Ethernet4.
    let frames = || {
        let v = show_json(&prefix, &["pfc", "counters"]);
        let n = |p: &str, k: &str| v[p][k].as_u64().unwrap_or(0);
        (n("Ethernet0", "tx_pause3"), n("Ethernet4", "tx_pause3"))
    };
    let wait = |what: &str, f: &dyn Fn((u64, u64)) -> bool| {
        let t0 = Instant::now();
        while !f(frames()) {
            assert!(t0.elapsed() < Duration::from_secs(60), "{what}: {:?}", frames());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait("no PAUSE on both senders' ports", &|(a, b)| a > 0 && b > 0);

    let o = config(&["pfc", "Ethernet0", "--enable", "none"]);
    if !o.status.success() {
        fail(sw, &o);
    }
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("port Ethernet0 pfc_enable = none: applied"),
        "{}",
        common::show(&o)
    );
    // Whatever was in flight settles; then Ethernet0 sends no PAUSE while Ethernet4 does.
    std::thread::sleep(Duration::from_millis(200));
    let (a0, b0) = frames();
    std::thread::sleep(Duration::from_millis(1500));
    let (a1, b1) = frames();
    assert_eq!(a1, a0, "PAUSE on Ethernet0 after PFC was taken off it");
    assert!(b1 > b0, "Ethernet4 stopped pausing: {b0} -> {b1}");
    let v = show_json(&prefix, &["pfc", "counters"]);
    let resumes = v["Ethernet0"]["tx_resume3"].as_u64().unwrap_or(0);

    let o = config(&["pfc", "Ethernet0", "--enable", "3"]);
    if !o.status.success() {
        fail(sw, &o);
    }
    assert!(gen.0.try_wait().unwrap().is_none(), "the senders ended before PFC was given back");
    wait("no PAUSE on Ethernet0 after PFC was given back", &|(a, _)| a > a1);
    let saved = d.join("saved.toml");
    assert!(config(&["save", saved.to_str().unwrap()]).status.success());
    let c = pfcswitch::config::load(&saved).unwrap();
    assert_eq!((c.ports[0].pfc_enable.clone(), c.ports[1].pfc_enable.clone()), (vec![3], vec![3]));
    // A bad list: one line, nothing applied.
    let bad = config(&["pfc", "Ethernet0", "--enable", "3,9"]);
    let err = String::from_utf8_lossy(&bad.stderr).trim().to_string();
    assert_eq!(bad.status.code(), Some(2), "{}", common::show(&bad));
    assert!(err.contains("pfc_enable") && !err.contains('\n'), "{err}");

    stop_incast(&d, &mut gen);
    let log = sw.stop();
    let s = read_json(&json);
    assert_conserved(&s);
    let drops = assert_lossless_unless_away(&s, HEADROOM_COVERS_NS, &log);
    // s1 (Ethernet4) is lossless throughout.
    let sent = assert_stream(&gen_json, "s1", drops["Ethernet4"]);
    eprintln!(
        "config pfc: Ethernet0 PAUSE frames {a0} -> {a1} over 1.5 s with PFC off (Ethernet4 {b0} -> {b1}), \
         {resumes} RESUMEs on Ethernet0 by then, PAUSE again once given back; s1 {sent} frames, lossless drops {drops:?}"
    );
}
