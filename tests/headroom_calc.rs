//! Headroom numbers recomputed here from the formula, independently of the library:
//! η = ceil(2·C·L/(8·v)) + 2·MTU + quanta·512/8 + ceil(C·sw/8e9), v = 197 863 022 m/s.

use pfcswitch::headroom::{check_explicit, compute, HeadroomInputs, DEFAULT_SW_RESPONSE_NS};

const V: f64 = 197_863_022.0;
const G: u64 = 1_000_000_000;

fn expected(speed: u64, cable: f64, mtu: u64, quanta: u64, sw_ns: u64) -> (u64, u64, u64) {
    let prop = (2.0 * speed as f64 * cable / (8.0 * V)).ceil() as u64;
    let peer = quanta * 64;
    let sw = (speed as u128 * sw_ns as u128).div_ceil(8 * G as u128) as u64;
    (prop, peer, prop + 2 * mtu + peer + sw)
}

#[test]
fn worked_numbers() {
    // (speed, cable m, mtu, quanta, sw ns, hand-computed total)
    //  100G 300 m 9216: prop = ceil(2e11·300/1582904176) = ceil(37905.01) = 37906
    //   + 18432 + 394·64 = 25216 + 10 µs·100G/8 = 125000 → 206554
    //  10G 5 m 1500 sw 0: prop = ceil(1e11/1582904176) = ceil(63.2) = 64, + 3000 + 4288 → 7352
    //  25G 3 m 9216 sw 2000 ns: prop = ceil(1.5e11/1582904176) = 95, + 18432 + 5120 + 6250 → 29897
    //  400G 100 m 9216 sw 10 µs: prop = ceil(8e13/1582904176) = ceil(50540.01) = 50541,
    //   + 18432 + 57920 + 500000 → 626893
    let cases: [(u64, f64, u32, u64, u64, u64); 4] = [
        (100 * G, 300.0, 9216, 394, 10_000, 206_554),
        (10 * G, 5.0, 1500, 67, 0, 7_352),
        (25 * G, 3.0, 9216, 80, 2_000, 29_897),
        (400 * G, 100.0, 9216, 905, 10_000, 626_893),
    ];
    for (speed, cable, mtu, quanta, sw, total) in cases {
        let (prop, peer, e) = expected(speed, cable, u64::from(mtu), quanta, sw);
        assert_eq!(e, total, "hand arithmetic for {speed} {cable}");
        let b = compute(&HeadroomInputs {
            speed_bps: speed,
            cable_m: cable,
            frame: mtu,
            sw_response_ns: sw,
            tx_inflight_bytes: 0,
        });
        assert_eq!(b.headroom_bytes, total);
        let t: std::collections::HashMap<_, _> = b.terms.iter().copied().collect();
        assert_eq!(t["propagation"], prop);
        assert_eq!(t["peer_response"], peer);
        assert_eq!(t["mtu_local"] + t["mtu_peer"], 2 * u64::from(mtu));
        assert_eq!(b.terms.iter().map(|x| x.1).sum::<u64>(), total);
    }
}

#[test]
fn speeds_between_table_entries_use_next_higher() {
    // 1G → 10G's 67; 56G → 100G's 394; 150G → 200G's 453.
    for (speed, quanta) in [(G, 67u64), (56 * G, 394), (150 * G, 453), (40 * G, 118), (50 * G, 147)] {
        let b = compute(&HeadroomInputs {
            speed_bps: speed,
            cable_m: 0.0,
            frame: 1500,
            sw_response_ns: 0,
            tx_inflight_bytes: 0,
        });
        assert_eq!(b.headroom_bytes, 3000 + quanta * 64, "{speed}");
    }
}

#[test]
fn json_and_text() {
    let b = compute(&HeadroomInputs::new(100 * G, 300.0, 9194));
    assert_eq!(b.inputs.sw_response_ns, DEFAULT_SW_RESPONSE_NS);
    let j = b.to_json();
    assert_eq!(j["speed_bps"], 100 * G);
    assert_eq!(j["cable_m"], 300.0);
    assert_eq!(j["max_frame"], 9216, "MTU 9194 + 22");
    assert_eq!(j["headroom_bytes"], 206_554);
    assert_eq!(j["terms"]["propagation"], 37_906);
    assert_eq!(j["terms"]["sw_response"], 125_000);
    assert_eq!(j["v_mps"], 197_863_022u64);
    let text = b.render_text();
    assert_eq!(text.lines().count(), 1 + b.terms.len() + 1, "{text}");
    assert!(text.contains("206554"));
    let w = check_explicit(100_000, 206_554).unwrap();
    assert!(w.contains("100000") && w.contains("206554"));
    assert_eq!(check_explicit(206_554, 206_554), None);
}
