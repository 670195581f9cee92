//! Arbitrary bytes as configuration text (UTF-8, lossily decoded) through validation and,
//! when valid, through planning (headroom, MMU layout, scheduler). Neither may panic, and
//! every error must be one line (`<file>: <field>: <what is wrong>`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match pfcswitch::config::from_str(&text, "fuzz.toml") {
        Ok(cfg) => {
            for w in &cfg.warnings {
                assert!(!w.contains('\n'), "multi-line warning: {w:?}");
            }
            match pfcswitch::plan::plan(&cfg, cfg.switch.sw_response_ns) {
                Ok(p) => {
                    for w in &p.warnings {
                        assert!(!w.contains('\n'), "multi-line plan warning: {w:?}");
                    }
                }
                Err(e) => {
                    let s = e.to_string();
                    assert!(!s.contains('\n'), "multi-line plan error: {s:?}");
                }
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "multi-line config error: {s:?}");
        }
    }
});
