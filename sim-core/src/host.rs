//! Host-side performance hints: nothing here changes what a model computes.

/// Asks the host CPU to bring the cache line holding `value` closer (a prefetch), so that a
/// lookup soon after does not wait for host memory. A no-op on hosts without the instruction.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address; `value` is a valid
    // reference anyway. SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// [`prefetch`]es every host cache line that `items` touches (one hint per 64 bytes, and the
/// last item's line, which a span not aligned to 64 bytes may end in).
#[inline]
pub fn prefetch_slice<T>(items: &[T]) {
    let step = (64 / std::mem::size_of::<T>().max(1)).max(1);
    for x in items.iter().step_by(step) {
        prefetch(x);
    }
    if let Some(last) = items.last() {
        prefetch(last);
    }
}
