//! Procedural table contents: every element a pure function of (seed, table, row, column).
//!
//! Embedding tables of real models reach hundreds of gigabytes; a simulator that held them in
//! host memory could not run them. Read-only tables are therefore procedural: the value of any
//! element is computed on demand, so the memory model, the reference computation and a user's
//! NumPy check all see the same numbers and a 100 GB table costs no host memory. Values are
//! multiples of 1/256 in [-1, 1): sums of up to 2^15 of them are exact in f32, so a pooled
//! result does not depend on the order in which it was accumulated.
//!
//! Narrower tables ([`TableFormat`]) store the same values: f16 and bf16 hold every multiple of
//! 1/256 in [-1, 1) exactly (at most 8 significant bits, exponents from -8 to 0), so a row
//! converted back to f32 is the f32 table's row. Int8 rows follow FBGEMM's fused 8-bit
//! row-wise quantization: `dim` int8 values `q`, then the row's f32 `scale` and f32 `bias`
//! (`dim + 8` bytes); the value is `q * scale + bias`. Procedural `q` is any int8, `scale` a
//! power of two (1/256 or 1/128) and `bias` a multiple of 1/256 in [-1/16, 1/16), so every
//! dequantized value is a multiple of 1/256 of magnitude below 1.0625, computed exactly by one
//! f32 multiply and one f32 add (with or without FMA), and pooled sums stay exact as above.

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

/// How a table's rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TableFormat {
    /// 4-byte IEEE binary32 values.
    #[default]
    F32,
    /// 2-byte IEEE binary16 values.
    F16,
    /// 2-byte bfloat16 values (the high half of an f32).
    Bf16,
    /// FBGEMM's fused 8-bit row-wise quantization: `dim` int8 values, then an f32 scale and an
    /// f32 bias.
    Int8,
}

impl TableFormat {
    /// Bytes of one stored value.
    pub fn elem_bytes(self) -> u64 {
        match self {
            TableFormat::F32 => 4,
            TableFormat::F16 | TableFormat::Bf16 => 2,
            TableFormat::Int8 => 1,
        }
    }

    /// Bytes of one row of `dim` values (an int8 row's scale and bias included).
    pub fn row_bytes(self, dim: u32) -> u64 {
        u64::from(dim) * self.elem_bytes() + if self == TableFormat::Int8 { 8 } else { 0 }
    }

    /// The f32 value of the stored element `bits` (the element's little-endian bytes,
    /// zero-extended): exact for every format; an int8 value is `q` itself (not dequantized).
    pub fn widen(self, bits: u32) -> f32 {
        match self {
            TableFormat::F32 => f32::from_bits(bits),
            TableFormat::F16 => f16_to_f32(bits as u16),
            TableFormat::Bf16 => f32::from_bits((bits & 0xffff) << 16),
            TableFormat::Int8 => f32::from(bits as u8 as i8),
        }
    }
}

/// The f32 value of IEEE binary16 `h` (exact: every f16 is an f32).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h) & 0x3ff;
    let bits = match (exp, man) {
        (0, 0) => sign,
        // Subnormal: man * 2^-24.
        (0, m) => return if sign != 0 { -(m as f32) } else { m as f32 } / (1u32 << 24) as f32,
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `x` as IEEE binary16, rounded to nearest, ties to even (overflow gives an infinity).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    // The value as man24 * 2^(e - 150) with the implicit bit; f16 units are 2^-24.
    let (m, e) = if exp == 0 { (man, -149) } else { (man | 0x80_0000, exp - 150) };
    // Round m * 2^e to a multiple of 2^(q) where q is the f16 quantum at that magnitude.
    let mag = if m == 0 { return sign } else { 31 - m.leading_zeros() as i32 + e };
    let quantum = (mag - 10).max(-24);
    let shift = quantum - e;
    let q = if shift <= 0 {
        u64::from(m) << (-shift).min(40)
    } else if shift >= 32 {
        0
    } else {
        let (kept, rest) = (m >> shift, m & ((1 << shift) - 1));
        let half = 1u32 << (shift - 1);
        u64::from(kept) + u64::from(rest > half || (rest == half && kept & 1 == 1))
    };
    // q units of 2^quantum; rebuild the f16.
    let value = q << (quantum + 24).max(0);
    // value is now in units of 2^-24: subnormal if below 2^-14.
    if value < 1 << 10 {
        return sign | value as u16;
    }
    let lz = 63 - value.leading_zeros() as i32; // position of the leading bit
    let e16 = lz - 24 + 15;
    if e16 >= 0x1f {
        return sign | 0x7c00;
    }
    let frac = ((value >> (lz - 10)) & 0x3ff) as u16;
    sign | ((e16 as u16) << 10) | frac
}

/// `x` as bfloat16, rounded to nearest, ties to even.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// The key of a table's per-row quantization parameters (an int8 table's scale and bias): a
/// column key no real column has.
pub fn row_params_key(seed: u64, table: u32) -> u64 {
    column_key(seed, table, u32::MAX)
}

/// The int8 value of row `row` in the column whose [`column_key`] is `key`.
#[inline]
pub fn keyed_q(key: u64, row: u64) -> i8 {
    (mix64(key ^ row) >> 56) as u8 as i8
}

/// The scale (1/256 or 1/128) and bias (a multiple of 1/256 in [-1/16, 1/16)) of row `row`,
/// under the table's [`row_params_key`].
#[inline]
pub fn keyed_scale_bias(key: u64, row: u64) -> (f32, f32) {
    let h = mix64(key ^ row);
    let scale = if h & 1 == 0 { 1.0 / 256.0 } else { 1.0 / 128.0 };
    let bias = ((h >> 59) as i32 - 16) as f32 / 128.0 / 2.0;
    (scale, bias)
}

/// An int8 row's dequantized value: `q * scale + bias`, one rounded multiply, then one
/// rounded add (exact for procedural rows).
#[inline]
pub fn dequantize(q: i8, scale: f32, bias: f32) -> f32 {
    let p = f32::from(q) * scale;
    p + bias
}

/// The f32 value element (`row`, `col`) of a table in `format` reads as, from the column's
/// key and (int8) the table's [`row_params_key`]: the value the converting or dequantizing
/// load yields.
#[inline]
pub fn format_value(format: TableFormat, key: u64, params_key: u64, row: u64) -> f32 {
    match format {
        TableFormat::F32 | TableFormat::F16 | TableFormat::Bf16 => keyed_value(key, row),
        TableFormat::Int8 => {
            let (scale, bias) = keyed_scale_bias(params_key, row);
            dequantize(keyed_q(key, row), scale, bias)
        }
    }
}

/// Byte `offset` of row `row` of a procedural table in `format` with column keys `keys` (one
/// per column) and, for int8, its [`row_params_key`] `params_key`: the stored encoding,
/// little-endian. `offset` must be below `format.row_bytes(keys.len())`.
pub fn row_byte(format: TableFormat, keys: &[u64], params_key: u64, row: u64, offset: u64) -> u8 {
    let dim = keys.len() as u64;
    let eb = format.elem_bytes();
    if format == TableFormat::Int8 && offset >= dim {
        let (scale, bias) = keyed_scale_bias(params_key, row);
        let word = if offset - dim < 4 { scale } else { bias };
        return word.to_le_bytes()[((offset - dim) % 4) as usize];
    }
    let col = (offset / eb) as usize;
    let byte = (offset % eb) as usize;
    let key = keys[col.min(keys.len().saturating_sub(1))];
    match format {
        TableFormat::F32 => keyed_value(key, row).to_le_bytes()[byte],
        TableFormat::F16 => f32_to_f16(keyed_value(key, row)).to_le_bytes()[byte],
        TableFormat::Bf16 => f32_to_bf16(keyed_value(key, row)).to_le_bytes()[byte],
        TableFormat::Int8 => keyed_q(key, row) as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_formats_hold_the_values_exactly() {
        for r in 0..4096u64 {
            let key = column_key(5, 1, 3);
            let x = keyed_value(key, r);
            assert_eq!(f16_to_f32(f32_to_f16(x)), x, "f16 {x}");
            assert_eq!(TableFormat::Bf16.widen(u32::from(f32_to_bf16(x))), x, "bf16 {x}");
            let (s, b) = keyed_scale_bias(row_params_key(5, 1), r);
            let q = keyed_q(key, r);
            let v = dequantize(q, s, b);
            assert_eq!(f64::from(v), f64::from(q) * f64::from(s) + f64::from(b), "int8 exact");
            assert!((v * 256.0).fract() == 0.0 && v.abs() < 1.125);
        }
        // Rounding: ties to even, overflow, subnormals.
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(-2.0f32.powi(-24)), 0x8001);
        assert_eq!(f16_to_f32(0x8001), -(2.0f32.powi(-24)));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
    }

    #[test]
    fn row_bytes_encode_the_values() {
        let keys: Vec<u64> = (0..5).map(|c| column_key(9, 2, c)).collect();
        let pk = row_params_key(9, 2);
        for format in [TableFormat::F32, TableFormat::F16, TableFormat::Bf16, TableFormat::Int8] {
            let bytes: Vec<u8> =
                (0..format.row_bytes(5)).map(|o| row_byte(format, &keys, pk, 77, o)).collect();
            let eb = format.elem_bytes() as usize;
            for (c, &key) in keys.iter().enumerate() {
                let mut w = [0u8; 4];
                w[..eb].copy_from_slice(&bytes[c * eb..(c + 1) * eb]);
                let mut x = format.widen(u32::from_le_bytes(w));
                if format == TableFormat::Int8 {
                    let f = |o: usize| f32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
                    x = dequantize(x as i8, f(5), f(9));
                }
                assert_eq!(x, format_value(format, key, pk, 77));
            }
        }
    }

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
