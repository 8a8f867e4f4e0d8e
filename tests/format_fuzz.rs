//! The serialized format against hostile bytes: round trips of every policy, truncation at every
//! prefix, and seeded random mutations that must yield `Err` or a decodable tensor, never a panic.

use fdsr::reference::{compress, decompress};
use fdsr::{CodecOptions, Compressed, Policy, Rounding};
use std::f32::consts::TAU;

/// A small counter-based PRNG (splitmix64) so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Smooth ReLU-like NCHW data with some noise, or flat noise for lower ranks.
fn tensor(shape: &[usize], seed: u64) -> Vec<f32> {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    if shape.len() == 4 {
        let (h, w) = (shape[2], shape[3]);
        let (fy, fx, ph) = (0.05 + 0.1 * r.unit(), 0.05 + 0.1 * r.unit(), 6.0 * r.unit());
        (0..n)
            .map(|i| {
                let (y, x) = (((i / w) % h) as f32, (i % w) as f32);
                let v = (TAU * (fy * y + fx * x) + ph + (i / (h * w)) as f32).sin() + 0.1 * r.unit();
                (v - 0.3).max(0.0)
            })
            .collect()
    } else {
        (0..n).map(|_| (r.unit() * 2.0 - 0.5).max(0.0)).collect()
    }
}

/// (policy, shape) pairs covering every body kind and the fdsr flat path.
fn cases() -> Vec<(&'static str, Vec<usize>)> {
    let s4 = vec![2, 3, 12, 19];
    vec![
        ("lossless", s4.clone()),
        ("uniform:1", vec![700]),
        ("uniform:3", s4.clone()),
        ("uniform:8", vec![3, 100]),
        ("division", s4.clone()),
        ("fdsr", s4.clone()),
        ("fdsr:bits=8,4,3,2", s4.clone()),
        ("fdsr:bits=16,0,16,5", s4.clone()),
        ("fdsr:budget=3", vec![2, 300]),
        ("fdsr:bits=8,4,3,2", vec![5, 7, 11]),
    ]
}

fn encoded() -> Vec<(String, Compressed, Vec<u8>)> {
    cases()
        .into_iter()
        .enumerate()
        .map(|(i, (p, shape))| {
            let policy: Policy = p.parse().unwrap();
            let rounding = if i % 2 == 0 { Rounding::Stochastic } else { Rounding::Nearest };
            let opts = CodecOptions { seed: 42 + i as u32, tensor_id: i as u32, rounding };
            let c = compress(&tensor(&shape, i as u64), &shape, &policy, &opts).unwrap();
            let b = c.to_bytes();
            (format!("{p} {shape:?}"), c, b)
        })
        .collect()
}

#[test]
fn every_policy_round_trips_through_bytes() {
    for (name, c, b) in encoded() {
        assert_eq!(b.len(), c.stored_bytes(), "{name}");
        assert_eq!(c.bytes_by_part().iter().map(|p| p.1).sum::<usize>(), b.len(), "{name}");
        assert!((c.ratio() - 4.0 * c.numel() as f64 / b.len() as f64).abs() < 1e-12);
        let back = Compressed::from_bytes(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back, c, "{name}");
        assert_eq!(back.to_bytes(), b, "{name}");
        let (x, y) = (decompress(&c).unwrap(), decompress(&back).unwrap());
        assert_eq!(x.len(), c.numel());
        assert!(x.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()), "{name}");
    }
}

#[test]
fn truncation_and_trailing_bytes_are_errors() {
    for (name, _, b) in encoded() {
        for k in 0..b.len() {
            assert!(Compressed::from_bytes(&b[..k]).is_err(), "{name}: prefix of {k}/{} bytes accepted", b.len());
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(Compressed::from_bytes(&longer).is_err(), "{name}: trailing byte accepted");
    }
}

#[test]
fn version_and_magic_are_checked() {
    let (_, _, mut b) = encoded().swap_remove(1);
    b[4] = 7;
    let e = Compressed::from_bytes(&b).unwrap_err().to_string();
    assert!(e.contains("version 7"), "{e}");
    b[0] = b'X';
    assert!(Compressed::from_bytes(&b).unwrap_err().to_string().contains("magic"));
}

#[test]
fn hostile_lengths_do_not_allocate() {
    // A rank-1 lossless header claiming 2^34 values, then a huge section count and nothing else.
    let mut b = b"FDSR".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&[0, 0, 1]);
    b.extend_from_slice(&(1u64 << 34).to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x40]);
    assert!(Compressed::from_bytes(&b).is_err());
    // More values than allowed, and a product that overflows u64.
    for dims in [[1u64 << 20, 1 << 20], [u64::MAX, 3]] {
        let mut b = b"FDSR".to_vec();
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&[0, 0, 2]);
        dims.iter().for_each(|d| b.extend_from_slice(&d.to_le_bytes()));
        b.extend_from_slice(&[0; 9]);
        assert!(Compressed::from_bytes(&b).is_err());
    }
}

#[test]
fn random_mutations_never_panic() {
    let cases = encoded();
    let mut rng = Rng(0x5eed);
    let (mut parsed, mut decoded) = (0, 0);
    for round in 0..3000 {
        let (_, _, orig) = &cases[round % cases.len()];
        let mut b = orig.clone();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len());
            match rng.below(5) {
                0 => b[i] ^= 1 << rng.below(8),
                1 => b[i] = rng.next() as u8,
                2 => b[i] = [0u8, 1, 0x7f, 0x80, 0xff][rng.below(5)],
                3 if b.len() > 1 => {
                    b.remove(i);
                }
                _ => b.insert(i, rng.next() as u8),
            }
        }
        if let Ok(c) = Compressed::from_bytes(&b) {
            parsed += 1;
            assert_eq!(c.stored_bytes(), b.len());
            if let Ok(y) = decompress(&c) {
                decoded += 1;
                assert_eq!(y.len(), c.numel());
            }
        }
    }
    // Most single-byte changes inside payloads still parse: the test exercises the decoders.
    assert!(parsed > 300 && decoded > 100, "parsed {parsed}, decoded {decoded}");
}
