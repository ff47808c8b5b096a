//! Hash maps keyed by simulated addresses, hashed with one folded multiply.
//!
//! SipHash (std's default) cost a fifth of a core's host time on its map of lines in flight;
//! simulated addresses are nothing adversarial, and no model iterates these maps in an order
//! that results depend on, so a multiplicative hash serves.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a `u64` address with one folded 128-bit multiply (the golden-ratio constant).
#[derive(Debug, Clone, Copy, Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        let p = u128::from(self.0 ^ x) * u128::from(0x9e37_79b9_7f4a_7c15_u64);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

/// A map from simulated addresses to `V` (see the module docs).
pub type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<AddressHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_lines_hash_apart_and_the_map_works() {
        let h = |x: u64| {
            let mut s = AddressHasher::default();
            s.write_u64(x);
            s.finish()
        };
        assert_ne!(h(0x1000), h(0x1040));
        assert_ne!(h(0x1000) >> 57, h(0x1040) >> 57, "the top bits (hashbrown's tag) differ too");
        let mut m: AddressMap<u32> = AddressMap::default();
        for a in (0..1000u64).map(|i| i * 64) {
            *m.entry(a).or_default() += 1;
        }
        assert_eq!(m.len(), 1000);
        assert_eq!(m.get(&640), Some(&1));
    }
}
