//! Unit tests of policy parsing and printing.

use super::*;

#[test]
fn policy_lists_keep_their_inner_commas() {
    let got = split_policies(
        "none, fdsr:bits=8,4,3,2,reuse,uniform:2,fdsr:budget=2,mask,reuse=16/16,fdsr:ratio=16,grad,drop=dc,division",
    );
    assert_eq!(
        got,
        [
            "none",
            "fdsr:bits=8,4,3,2,reuse",
            "uniform:2",
            "fdsr:budget=2,mask,reuse=16/16",
            "fdsr:ratio=16,grad,drop=dc",
            "division"
        ]
    );
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
        "fdsr:ratio=11,mask,grad=4",
        "fdsr:ratio=11,mask,grad=2.5,auto",
        "fdsr:ratio=11,mask,grad,drop=dc",
        "fdsr:ratio=11,mask,grad=4,drop=64,realloc",
        "fdsr:ratio=11,mask,edges=0/1/10/64",
        "fdsr:ratio=11,mask=zeros,grad",
        "fdsr:ratio=11,mask=clamp,grad",
        "fdsr:ratio=12.5,mask,grad,auto",
        "fdsr:ratio=16,mask,grad,realloc",
        "fdsr:budget=2,realloc,edges=0/1/10/64",
    ] {
        let p: Policy = s.parse().unwrap();
        assert_eq!(p.to_string(), s);
    }
    assert_eq!("fdsr:reuse".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,reuse");
    assert_eq!("fdsr:budget=2,reuse=16/16".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,reuse");
    assert_eq!("fdsr:ratio=11,grad=8".parse::<Policy>().unwrap().to_string(), "fdsr:ratio=11,grad=8");
    assert_eq!("fdsr:ratio=11,grad=64".parse::<Policy>().unwrap().to_string(), "fdsr:ratio=11,grad=64");
    let c = |s: &str| match s.parse::<Policy>().unwrap() {
        Policy::Fdsr(c) => c.weights().dc,
        _ => f32::NAN,
    };
    assert_eq!((c("fdsr:ratio=16"), c("fdsr:ratio=16,grad"), c("fdsr:ratio=16,grad=4")), (1.0, 8.0, 4.0));
    // `,grad` alone: 8 up to 2.25 bits per value, 64 from 3.25, geometric in between.
    assert_eq!((c("fdsr:budget=2,grad"), c("fdsr:budget=2.25,grad"), c("fdsr:budget=3.25,grad")), (8.0, 8.0, 64.0));
    assert_eq!(c("fdsr:budget=5,grad"), 64.0);
    assert!((c("fdsr:budget=2.75,grad") - 8.0 * 8f32.sqrt()).abs() < 1e-3);
    // A dropped band: 1 without `,grad`, the largest weight under `,grad` alone, the DC's under
    // `,grad=W` or `,drop=dc`, W under `,drop=W`.
    let d = |s: &str| match s.parse::<Policy>().unwrap() {
        Policy::Fdsr(c) => c.weights().dropped,
        _ => f32::NAN,
    };
    assert_eq!(
        (d("fdsr:ratio=16"), d("fdsr:ratio=16,grad"), d("fdsr:ratio=16,grad=4")),
        (1.0, DEFAULT_DROP_WEIGHT, 4.0)
    );
    assert_eq!((d("fdsr:budget=3.25,grad,drop=dc"), d("fdsr:budget=3.25,grad=4,drop=32")), (64.0, 32.0));
    assert_eq!("fdsr:mask".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,mask");
    assert_eq!("fdsr:realloc".parse::<Policy>().unwrap().to_string(), "fdsr:budget=2,realloc");
    assert_eq!("fdsr:ratio=16,realloc,auto".parse::<Policy>().unwrap().to_string(), "fdsr:ratio=16,auto");
    assert_eq!("fdsr:ratio=11,mask=shared".parse::<Policy>().unwrap().to_string(), "fdsr:ratio=11,mask");
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
        "fdsr:budget=2,realloc=1",
        "fdsr:bits=8,4,2,0,realloc",
        "fdsr:bits=8,4,2,0,auto",
        "fdsr:budget=2,grad=0.5",
        "fdsr:budget=2,grad=x",
        "fdsr:budget=2,grad=inf",
        "fdsr:budget=2,grad,drop=0.5",
        "fdsr:budget=2,grad,drop=2048",
        "fdsr:budget=2,grad,drop=ac",
        "fdsr:budget=2,drop=dc",
        "fdsr:budget=2,grad,drop",
        "fdsr:budget=2,edges=0/2/64",
        "fdsr:budget=2,edges=0/1/6/6/64",
        "fdsr:budget=2,edges=0/1/63",
        "fdsr:budget=2,edges=",
        "fdsr:budget=2,mask=clip",
    ] {
        assert!(bad.parse::<Policy>().is_err(), "{bad} should be rejected");
    }
}
