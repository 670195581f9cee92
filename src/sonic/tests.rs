use super::*;

fn real(name: &str) -> Result<Import, SonicError> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/sonic").join(name);
    let db = Db::load(&[p])?;
    import(&db, None, name)
}

#[test]
fn scratch_real_files() {
    for f in [
        "s6000-t0-config_db.json",
        "z9264f-t1-config_db.json",
        "msn2700-t1-redis-dump.json",
        "t1-smartswitch-config_db.json",
    ] {
        match real(f) {
            Ok(i) => {
                eprintln!("== {f}: ok");
                for n in &i.notes {
                    eprintln!("{n}");
                }
            }
            Err(e) => eprintln!("== {f}: {e}"),
        }
    }
    panic!("show");
}
