//! The pfcgen spec's tests: streams, ports, files and the CLI resolved, errors one line.

use super::*;

fn cli(ports: &[&str], streams: &[&str]) -> CliSpec {
    CliSpec {
        ports: ports.iter().map(|s| s.to_string()).collect(),
        streams: streams.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn rates() {
    assert_eq!(RateSpec::parse("3Mbit/s"), Ok(RateSpec::Bps(3e6)));
    assert_eq!(RateSpec::parse("3Mbps"), Ok(RateSpec::Bps(3e6)));
    assert_eq!(RateSpec::parse("10G"), Ok(RateSpec::Bps(10e9)));
    assert_eq!(RateSpec::parse("5000bps"), Ok(RateSpec::Bps(5000.0)));
    assert_eq!(RateSpec::parse("1.5Mpps"), Ok(RateSpec::Pps(1.5e6)));
    assert_eq!(RateSpec::parse("100pps"), Ok(RateSpec::Pps(100.0)));
    assert_eq!(RateSpec::parse("50%"), Ok(RateSpec::Percent(50.0)));
    assert_eq!(RateSpec::parse("max"), Ok(RateSpec::Max));
    for bad in ["3", "", "fast", "101%", "0pps", "-1pps", "3Q", "nanpps", "1e30bps"] {
        assert!(RateSpec::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn sizes() {
    assert_eq!(SizeSpec::parse("1000"), Ok(SizeSpec::Fixed(1000)));
    assert_eq!(SizeSpec::parse("64-1518"), Ok(SizeSpec::Range(64, 1518)));
    assert_eq!(SizeSpec::parse("imix"), Ok(SizeSpec::Imix(SIMPLE_IMIX.to_vec())));
    assert_eq!(SizeSpec::parse("imix:64x1/128x3"), Ok(SizeSpec::Imix(vec![(64, 1), (128, 3)])));
    for bad in ["63", "10000", "1518-64", "imix:64", "imix:64x0", "x"] {
        assert!(SizeSpec::parse(bad).is_err(), "{bad}");
    }
    assert!((SizeSpec::parse("imix").unwrap().mean() - (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0).abs() < 1e-9);
}

#[test]
fn cli_stream_and_defaults() {
    let s = resolve(
        None,
        &cli(&["net_null0"], &["rate=3Mbit/s,size=1000,dst_port=4791,src_port=49152-65535,pcp=3,vlan=100,ecn=ect0"]),
    )
    .unwrap();
    let st = &s.streams[0];
    assert_eq!(st.rate, RateSpec::Bps(3e6));
    assert_eq!(st.dst_port, Range::one(4791));
    assert_eq!(st.src_port, Range { start: 49152, count: 16384 });
    assert_eq!((st.vlan, st.priority, st.ecn, st.id, st.port), (Some((3, 100)), 3, 2, 0, 0));
    assert_eq!(s.ports[0].pfc_enable, 0xff);
    let argv = s.eal_argv(&[]);
    assert!(argv.contains(&"--no-pci".to_string()) && argv.last().unwrap() == "--vdev=net_null0", "{argv:?}");
    // Untagged: the priority is the TC of SONiC's default DSCP map.
    let s = resolve(None, &cli(&["net_null0"], &["dscp=3", "dscp=46", "dscp=3,priority=6"])).unwrap();
    assert_eq!(s.streams.iter().map(|x| x.priority).collect::<Vec<_>>(), vec![3, 5, 6]);
    assert_eq!(s.rx_streams, 3);
}

#[test]
fn errors_are_one_line_and_name_the_field() {
    let cases: &[(&[&str], &[&str], &str)] = &[
        (&["net_null0"], &["rate=3"], "--stream[0]: stream.rate:"),
        (&["net_null0"], &["sise=64"], "--stream[0]: stream.sise: unknown field"),
        (&["net_null0"], &["port=3"], "--stream[0]: stream.port:"),
        (&["net_null0"], &["dscp=64"], "--stream[0]: stream.dscp: 64 is outside"),
        (&["net_null0"], &["src_ip=10.0.0.300"], "--stream[0]: stream.src_ip:"),
        (&["net_null0"], &["burst_on=1ms"], "--stream[0]: stream.burst_off:"),
        (&["net_null0"], &["id=1", "id=1"], "--stream[1]: stream.id:"),
        (&["bogus dev"], &[], "--port[0]: port.devargs:"),
        (&[], &[], "pfcgen: port: no port"),
    ];
    for (p, s, want) in cases {
        let e = resolve(None, &cli(p, s)).unwrap_err().to_string();
        assert!(e.starts_with(want), "{e} does not start with {want}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn roce_and_dcqcn() {
    let c = CliSpec {
        dcqcn_time_scale: Some(100.0),
        ..cli(&["net_null0"], &["size=78", "roce=true,id=5", "dcqcn=true,size=78"])
    };
    let s = resolve(None, &c).unwrap();
    let r: Vec<_> = s.streams.iter().map(|x| (x.roce, x.dcqcn, x.dst_port.start)).collect();
    assert_eq!(r, vec![(false, false, 5678), (true, false, 4791), (true, true, 4791)]);
    assert_eq!(s.streams[1].size, SizeSpec::Fixed(1086));
    assert_eq!((s.dcqcn.time_scale, s.cnp.enable), (100.0, false));
    // Everything RoCEv2 with DCQCN from the command line; the smallest RoCEv2 frame.
    let s = resolve(None, &CliSpec { dcqcn: true, cnp: true, ..cli(&["net_null0"], &["size=78"]) }).unwrap();
    assert!(s.streams[0].roce && s.streams[0].dcqcn && s.cnp.enable);
    let text = "[[port]]\ndevargs = \"net_null0\"\n[dcqcn]\ng = 0.0625\ntimer = \"300us\"\nai_rate = \"5Mbit/s\"\n\
                byte_counter = \"32KiB\"\ntime_scale = 10\n[cnp]\ninterval = \"4us\"\ndscp = 46\n";
    let s = resolve(Some(("g.toml", text)), &CliSpec::default()).unwrap();
    assert_eq!(
        (s.dcqcn.g, s.dcqcn.timer_ns, s.dcqcn.ai_bps, s.dcqcn.byte_counter),
        (0.0625, 300_000, Some(5e6), 32768)
    );
    assert_eq!((s.cnp.enable, s.cnp.interval_ns, s.cnp.dscp, s.cnp.pcp), (true, 4000, 46, 6));
    let p = s.dcqcn.params(100e6, 1_000_000_000);
    assert_eq!((p.timer_ticks, p.alpha_ticks, p.ai_bps, p.hai_bps, p.min_bps), (3_000_000, 550_000, 5e6, 50e6, 1e5));
    for (file, want) in [
        ("[dcqcn]\ng = 2\n", "g.toml: dcqcn.g: 2 is outside"),
        ("[dcqcn]\nai_rate = \"5%\"\n", "g.toml: dcqcn.ai_rate: '5%' is not a bit rate"),
        ("[dcqcn]\ntimer = \"0us\"\n", "g.toml: dcqcn.timer: must be longer than 0"),
        ("[cnp]\nprio = 3\n", "g.toml: cnp.prio: unknown field"),
        ("[[stream]]\nroce = true\nsize = 77\n", "g.toml: stream[0].size: 77 is smaller"),
        ("[[stream]]\nroce = true\ndst_port = 5000\n", "g.toml: stream[0].dst_port: a RoCEv2 stream"),
        ("[[stream]]\nroce = false\ndcqcn = true\n", "g.toml: stream[0].dcqcn: DCQCN needs"),
    ] {
        let text = format!("[[port]]\ndevargs = \"net_null0\"\n{file}");
        let e = resolve(Some(("g.toml", &text)), &CliSpec::default()).unwrap_err().to_string();
        assert!(e.starts_with(want) && !e.contains('\n'), "{e} does not start with {want}");
    }
}

#[test]
fn toml_file() {
    let text = r#"
[eal]
args = ["--no-huge", "-m", "256", "--lcores=0@1"]
[[port]]
name = "a"
devargs = "net_memif0,role=client,socket=/tmp/x.sock"
speed = "100M"
pfc_enable = [3]
[[port]]
name = "b"
devargs = "0000:3b:00.0"
[[stream]]
port = "b"
rate = "50%"
size = "imix"
src_mac = "02:00:00:00:00:01-02:00:00:00:00:10"
dst_ip = "10.0.0.1-10.0.0.4"
count = 1000
burst_on = "1ms"
burst_off = "9ms"
"#;
    let s = resolve(Some(("g.toml", text)), &CliSpec { count: Some(7), ..Default::default() }).unwrap();
    assert_eq!(s.ports[0].pfc_enable, 1 << 3);
    assert_eq!(s.ports[0].speed_bps, Some(100_000_000));
    let st = &s.streams[0];
    assert_eq!((st.port, st.count, st.rate), (1, Some(7), RateSpec::Percent(50.0)));
    assert_eq!(st.src_mac, Some(Range { start: 0x0200_0000_0001, count: 16 }));
    assert_eq!(st.dst_ip.at(5), 0x0a00_0002);
    assert_eq!(st.burst, Some(Burst { on_ns: 1_000_000, off_ns: 9_000_000 }));
    let argv = s.eal_argv(&[]);
    assert!(argv.contains(&"-a".to_string()) && !argv.contains(&"--no-pci".to_string()), "{argv:?}");
    let e = resolve(Some(("g.toml", "[[stream]]\nrate = \"1pps\"\n[[port]]\nspeed = \"1G\"\n")), &CliSpec::default())
        .unwrap_err()
        .to_string();
    assert_eq!(e, "g.toml: port[0].devargs: missing (e.g. \"net_memif0,role=client,socket=/tmp/a.sock\")");
    let e = resolve(Some(("g.toml", "[[port]\n")), &CliSpec::default()).unwrap_err().to_string();
    assert!(e.starts_with("g.toml: line 1:") && !e.contains('\n'), "{e}");
}
