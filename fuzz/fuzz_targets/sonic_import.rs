//! Arbitrary bytes as a SONiC CONFIG_DB file (JSON) through `import sonic`: no panic, every
//! error one line (`<file>: <TABLE|key|field>: <what is wrong>`), every note one line, and
//! what imports saves back as CONFIG_DB (`config save --format sonic`) and imports again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pfcswitch::sonic;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let db = match sonic::Db::from_texts(&[("fuzz.json".into(), text)]) {
        Ok(db) => db,
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "multi-line load error: {e}");
            return;
        }
    };
    if let Ok(f) = sonic::frr::frr(&db) {
        assert!(f.notes.iter().all(|n| !n.contains('\n')));
    }
    match sonic::import(&db, None, "fuzz") {
        Ok(imp) => {
            for n in &imp.notes {
                assert!(!n.line.contains('\n'), "multi-line note: {n}");
            }
            let (saved, _) = sonic::export::config_db(&imp.config);
            let again = sonic::Db::from_texts(&[("saved.json".into(), saved.to_string())]).expect("saved JSON loads");
            if let Err(e) = sonic::import(&again, None, "saved") {
                panic!("a saved configuration does not import back: {e}");
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line import error: {e}"),
    }
});
