//! Seeded index generators: uniform and Zipf over table rows.
//!
//! Zipf samples use rejection-inversion (Hoermann and Derflinger, 1996), exact for any exponent
//! and any table size without a table of probabilities, so a 40M-row table costs nothing.
//! Popularity ranks are mapped onto row ids by an affine permutation `row = (a * rank + c) mod
//! rows` with `a` coprime to `rows`, so hot rows are spread over the table as FBGEMM's benchmark
//! does with its random permutation.

use crate::workload::IndexDistribution;
use rand::Rng;
use rand_pcg::Pcg64;

/// Draws row indices of one table.
pub struct IndexGenerator {
    rng: Pcg64,
    rows: u64,
    kind: Kind,
    perm_a: u64,
    perm_c: u64,
}

enum Kind {
    Uniform,
    Zipf(Zipf),
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A uniform f64 in [0, 1) from 53 random bits.
fn unit(rng: &mut Pcg64) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl IndexGenerator {
    /// A generator over `rows` rows (at least 1) drawing from `rng`.
    pub fn new(dist: IndexDistribution, rows: u64, mut rng: Pcg64) -> Self {
        let rows = rows.max(1);
        let kind = match dist {
            IndexDistribution::Uniform => Kind::Uniform,
            IndexDistribution::Zipf { alpha } => Kind::Zipf(Zipf::new(rows, alpha)),
        };
        // Golden-ratio multiplier, nudged until coprime with the row count.
        let mut perm_a = (0x9E37_79B9_7F4A_7C15u64 % rows).max(1);
        while gcd(perm_a, rows) != 1 {
            perm_a += 1;
        }
        let perm_c = rng.next_u64() % rows;
        Self { rng, rows, kind, perm_a, perm_c }
    }

    /// The next row index.
    pub fn next_index(&mut self) -> u64 {
        match &self.kind {
            Kind::Uniform => self.rng.next_u64() % self.rows,
            Kind::Zipf(z) => {
                let rank = z.sample(&mut self.rng) - 1;
                ((self.perm_a as u128 * rank as u128 + self.perm_c as u128) % self.rows as u128) as u64
            }
        }
    }
}

/// Zipf over ranks 1..=n with exponent s, by rejection-inversion.
struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    shift: f64,
}

/// (exp(x) - 1) / x, accurate near 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.exp_m1() / x } else { 1.0 + x / 2.0 * (1.0 + x / 3.0) }
}

/// ln(1 + x) / x, accurate near 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 { x.ln_1p() / x } else { 1.0 - x * (0.5 - x / 3.0) }
}

impl Zipf {
    fn new(n: u64, s: f64) -> Self {
        let mut z = Self { n: n as f64, s, h_x1: 0.0, h_n: 0.0, shift: 0.0 };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(z.n + 0.5);
        z.shift = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    /// Density up to a constant: x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Antiderivative of h: (x^(1-s) - 1) / (1 - s), continuous at s = 1 (ln x).
    fn big_h(&self, x: f64) -> f64 {
        let l = x.ln();
        expm1_over_x((1.0 - self.s) * l) * l
    }

    fn big_h_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * x).exp()
    }

    fn sample(&self, rng: &mut Pcg64) -> u64 {
        loop {
            let u = self.h_n + unit(rng) * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.shift || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SeedTree;

    fn draw(dist: IndexDistribution, rows: u64, n: usize, seed: u64) -> Vec<u64> {
        let mut g = IndexGenerator::new(dist, rows, SeedTree::new(seed).stream("t"));
        (0..n).map(|_| g.next_index()).collect()
    }

    #[test]
    fn indices_stay_in_range_and_follow_the_seed() {
        for dist in [IndexDistribution::Uniform, IndexDistribution::Zipf { alpha: 1.05 }] {
            let a = draw(dist, 1000, 5000, 1);
            assert!(a.iter().all(|&i| i < 1000));
            assert_eq!(a, draw(dist, 1000, 5000, 1));
            assert_ne!(a, draw(dist, 1000, 5000, 2));
        }
    }

    #[test]
    fn zipf_rank_frequencies_follow_the_power_law() {
        // With alpha = 1.2 over 10,000 rows, rank 1 has probability 1/H(10000, 1.2) ~ 0.2.
        let rows = 10_000u64;
        let n = 200_000;
        let mut counts = std::collections::HashMap::new();
        for i in draw(IndexDistribution::Zipf { alpha: 1.2 }, rows, n, 9) {
            *counts.entry(i).or_insert(0u64) += 1;
        }
        let mut freq: Vec<u64> = counts.into_values().collect();
        freq.sort_unstable_by(|a, b| b.cmp(a));
        let norm: f64 = (1..=rows).map(|k| (k as f64).powf(-1.2)).sum();
        for (rank, &f) in freq.iter().enumerate().take(5) {
            let expect = n as f64 * ((rank + 1) as f64).powf(-1.2) / norm;
            let err = (f as f64 - expect).abs() / expect;
            assert!(err < 0.05, "rank {}: {f} draws, expected {expect:.0}", rank + 1);
        }
    }

    #[test]
    fn uniform_is_flat() {
        let mut counts = [0u64; 10];
        for i in draw(IndexDistribution::Uniform, 10, 100_000, 3) {
            counts[i as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
    }
}
