//! Tests of the bit allocation: the search against trying every choice, fitting, monotonicity.

use super::*;
use crate::rules::config::DEFAULT_DROP_WEIGHT;

fn stats(bands: usize) -> FdsrStats {
    let edges: Vec<u8> = match bands {
        4 => vec![0, 1, 6, 28, 64],
        5 => vec![0, 1, 6, 28, 45, 64],
        _ => vec![0, 1, 3, 6, 10, 15, 28, 64],
    };
    let mut s = FdsrStats::new(&edges);
    s.numel = 2 * 4 * 64 * 64;
    s.planes = 8;
    (s.zero_tiles, s.dc_tiles, s.full_tiles) = (200, 50, 262);
    for j in 1..s.bands() {
        s.band_sum_n_max2[j] = 1e4 / (1u64 << (2 * j)) as f64;
        s.band_energy[j] = 1e4 / (1u64 << j) as f64;
    }
    s.set_dc(&[10.0; 8], &[39; 8]);
    s
}

#[test]
fn gradient_aware_allocation_drops_fewer_bands() {
    // Energies well under the range bound, as in real activations (most values are small).
    let mut plain = stats(4);
    for j in 1..4 {
        plain.band_energy[j] = plain.band_sum_n_max2[j] / 16.0;
    }
    // Both weights 8 (`,grad,drop=dc` at these budgets), then dropped bands at the default.
    let weighed = |dropped: f32| {
        let mut s = plain.clone();
        s.set_weights(AllocWeights { dc: coherent_weight_at(2.0), dropped });
        s
    };
    let (grad, bias) = (weighed(coherent_weight_at(2.0)), weighed(DEFAULT_DROP_WEIGHT));
    let dropped = |b: &[u8]| b[1..].iter().filter(|&&x| x == 0).count();
    let (mut fewer, mut fewer_still) = (false, false);
    for budget in [0.5, 1.0, 2.0, 3.0] {
        let [p, g, d] = [&plain, &grad, &bias].map(|s| choose_bits(s, budget).unwrap());
        assert!(dropped(&g) <= dropped(&p), "budget {budget}: {g:?} vs {p:?}");
        assert!(dropped(&d) <= dropped(&g), "budget {budget}: {d:?} vs {g:?}");
        for (s, b) in [(&grad, &g), (&bias, &d)] {
            assert!(stored_bits(s, b) as f64 <= budget * s.numel as f64);
        }
        fewer |= dropped(&g) < dropped(&p);
        fewer_still |= dropped(&d) < dropped(&g);
    }
    assert!(fewer && fewer_still, "each weight changes some choice");
}

#[test]
fn the_search_finds_what_trying_every_choice_finds() {
    for bands in [4, 5] {
        let mut s = stats(bands);
        s.set_weights(AllocWeights { dc: 8.0, dropped: 64.0 });
        for budget in [0.3, 0.8, 1.25, 2.0, 3.0, 4.5, 12.0] {
            let limit = budget * s.numel as f64;
            let combos = 9 * 10usize.pow(bands as u32 - 1);
            let mut best: Option<(f64, usize, Vec<u8>)> = None;
            for k in 0..combos {
                let (mut r, mut bits) = (k, vec![0u8; bands]);
                for j in (0..bands).rev() {
                    let ladder: &[u8] = if j == 0 { &DC_CHOICES } else { &AC_CHOICES };
                    bits[j] = ladder[r % ladder.len()];
                    r /= ladder.len();
                }
                let (size, err) = (stored_bytes(&s, &bits), total_error(&s, &bits));
                let fits = (size * 8) as f64 <= limit;
                if fits && best.as_ref().is_none_or(|(e, z, _)| err < *e || (err == *e && size < *z)) {
                    best = Some((err, size, bits));
                }
            }
            let want = best.map(|b| b.2);
            assert_eq!(choose_bits(&s, budget).ok(), want, "{bands} bands, budget {budget}");
        }
    }
}

#[test]
fn one_search_for_many_budgets_answers_each_as_alone() {
    for bands in [4, 5, 7] {
        let mut s = stats(bands);
        s.set_weights(AllocWeights { dc: 8.0, dropped: 64.0 });
        // Unsorted, repeated, and one too small.
        let budgets = [3.0, 0.3, 12.0, 0.01, 1.25, 0.8, 3.0, 2.0, 4.5, 1.0];
        let all = choose_bits_at(&s, &budgets).unwrap();
        assert_eq!(all.len(), budgets.len());
        for (b, got) in budgets.iter().zip(all) {
            match (got, choose_bits(&s, *b)) {
                (Ok(x), Ok(y)) => assert_eq!(x, y, "{bands} bands, budget {b}"),
                (Err(FdsrError::BudgetTooLow { .. }), Err(FdsrError::BudgetTooLow { .. })) => assert_eq!(*b, 0.01),
                (x, y) => panic!("{bands} bands, budget {b}: {x:?} vs {y:?}"),
            }
        }
    }
    assert!(choose_bits_at(&stats(5), &[]).unwrap().is_empty());
}

#[test]
fn allocation_fits_and_improves_with_budget() {
    for bands in [4, 7] {
        let s = stats(bands);
        let mut last = f64::INFINITY;
        for budget in [0.3, 0.5, 1.0, 2.0, 3.0, 6.0, 12.0] {
            let bits = choose_bits(&s, budget).unwrap();
            assert_eq!(bits.len(), s.bands());
            assert!(stored_bits(&s, &bits) as f64 <= budget * s.numel as f64);
            let e = total_error(&s, &bits);
            assert!(e <= last, "budget {budget}: error {e} > {last} ({bits:?})");
            last = e;
        }
    }
}

#[test]
fn too_small_budget_is_an_error() {
    let s = stats(4);
    match choose_bits(&s, 0.01) {
        Err(FdsrError::BudgetTooLow { budget, needed }) => {
            assert_eq!(budget, 0.01);
            assert!(needed > 0.01);
        }
        other => panic!("expected BudgetTooLow, got {other:?}"),
    }
    assert!(matches!(choose_bits(&FdsrStats::new(&[0, 1, 64]), 2.0), Err(FdsrError::InvalidConfig(_))));
    assert!(flat_bits_for_budget(1000, 0.5).is_err());
    assert_eq!(flat_bits_for_budget(1 << 16, 2.2).unwrap(), 2);
    assert_eq!(flat_bits_for_budget(1 << 16, 100.0).unwrap(), 8);
    assert_eq!(flat_bits_for_fixed(&[8, 4, 3, 2]), 8);
    assert_eq!(flat_bits_for_fixed(&[0, 0]), 1);
    assert_eq!(class_bits(&[0, 1, 6, 28, 64], &[8, 4, 0, 16]), [0, 8, 8 + AC_SCALE_BITS + 20 + 36 * 16, 0]);
}
