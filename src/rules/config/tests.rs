//! Unit tests of policy parsing and printing.

use super::*;

#[test]
fn policy_lists_keep_their_inner_commas() {
    let got = split_policies("none, fdsr:bits=8,4,3,2,reuse,uniform:2,fdsr:budget=2,mask,reuse=16/16,division");
    assert_eq!(got, ["none", "fdsr:bits=8,4,3,2,reuse", "uniform:2", "fdsr:budget=2,mask,reuse=16/16", "division"]);
    assert!(split_policies("").is_empty());
}

#[test]
fn policies_round_trip_through_strings() {
    for s in [
        "lossless",
        "division",
        "uniform:2",
        "fdsr:budget=2",
        "fdsr:bits=8,4,3,2",
        "fdsr:budget=2,reuse",
        "fdsr:bits=8,4,3,2,reuse",
        "fdsr:budget=1.5,reuse=8/12/2",
        "fdsr:bits=8,4,2,0,mask",
        "fdsr:budget=2,mask,reuse",
        "fdsr:budget=2,mask,grad",
        "fdsr:ratio=16,mask,grad",
        "fdsr:ratio=12.5,mask,grad,auto",
    ] {
        let p: Policy = s.parse().unwrap();
        assert_eq!(p.to_string(), s);
    }
    assert_eq!("fdsr:reuse".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,reuse");
    assert_eq!("fdsr:budget=2,reuse=16/16".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,reuse");
    assert_eq!("fdsr:mask".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,mask");
    assert_eq!("fdsr:ratio=16".parse::<Policy>().unwrap(), {
        let mut c = FdsrConfig { ratio: Some(16.0), ..Default::default() };
        c.bits = BitChoice::Budget(2.0);
        Policy::Fdsr(c)
    });
    assert_eq!("fdsr:budget=2,reuse,mask".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,mask,reuse");
    for bad in [
        "uniform:9",
        "uniform",
        "fdsr:bits=8,4,9,2",
        "fdsr:budget=-1",
        "nope",
        "fdsr:bits=8,4",
        "fdsr:budget=2,reuse=0/16",
        "fdsr:budget=2,reuse=16/21",
        "fdsr:budget=2,reuse=64/16",
        "fdsr:budget=2,reuse=16",
        "fdsr:budget=2,reusex",
        "fdsr:budget=2,mask=1",
        "fdsr:ratio=0.5",
        "fdsr:ratio=x",
        "fdsr:budget=2,auto=1",
    ] {
        assert!(bad.parse::<Policy>().is_err(), "{bad} should be rejected");
    }
}
