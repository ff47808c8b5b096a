//! Procedural table contents: every element a pure function of (seed, table, row, column).
//!
//! Embedding tables of real models reach hundreds of gigabytes; a simulator that held them in
//! host memory could not run them. Read-only tables are therefore procedural: the value of any
//! element is computed on demand, so the memory model, the reference computation and a user's
//! NumPy check all see the same numbers and a 100 GB table costs no host memory. Values are
//! multiples of 1/256 in [-1, 1): sums of up to 2^15 of them are exact in f32, so a pooled
//! result does not depend on the order in which it was accumulated.

/// splitmix64's finaliser: a bijective, well-mixing 64-bit hash step.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The f32 value of element (`row`, `col`) of table `table` under `seed`.
#[inline]
pub fn table_value(seed: u64, table: u32, row: u64, col: u32) -> f32 {
    keyed_value(column_key(seed, table, col), row)
}

/// The part of [`table_value`] that depends on the column only: readers of whole rows compute
/// it once per column (three of the four hash steps) and call [`keyed_value`] per element.
#[inline]
pub fn column_key(seed: u64, table: u32, col: u32) -> u64 {
    mix64(mix64(seed ^ ((table as u64) << 32) ^ col as u64))
}

/// The value of row `row` in the column whose [`column_key`] is `key`.
#[inline]
pub fn keyed_value(key: u64, row: u64) -> f32 {
    let h = mix64(key ^ row);
    // 9 bits -> -256..=255, scaled by 1/256: exact in f32.
    ((h >> 55) as i32 - 256) as f32 / 256.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_deterministic_exact_and_spread() {
        assert_eq!(table_value(1, 2, 3, 4), table_value(1, 2, 3, 4));
        let vals: Vec<f32> = (0..4096).map(|r| table_value(7, 0, r, 0)).collect();
        assert!(vals.iter().all(|v| (-1.0..1.0).contains(v) && (v * 256.0).fract() == 0.0));
        let mean = vals.iter().sum::<f32>() / vals.len() as f32;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert_ne!(table_value(7, 0, 1, 0), table_value(8, 0, 1, 0));
        assert_ne!(table_value(7, 0, 1, 0), table_value(7, 1, 1, 0));
    }

    #[test]
    fn keyed_values_are_table_values() {
        for (seed, table, row, col) in [(1u64, 2u32, 3u64, 4u32), (u64::MAX, 7, 1 << 40, 255), (0, 0, 0, 0)] {
            assert_eq!(keyed_value(column_key(seed, table, col), row), table_value(seed, table, row, col));
        }
    }
}
