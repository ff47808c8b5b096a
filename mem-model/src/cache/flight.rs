//! Messages crossing an interconnect, released in the order they arrive at their far side.
//!
//! Every message is due at `edge(cycle_of(sent) + latency)`, and messages leave in (due, send
//! order) order. Messages of the same latency are due in the order they were sent (time only
//! moves forward), so each latency keeps a plain FIFO; with several latencies (a mesh) a small
//! heap holds the head of each non-empty FIFO. Pushing and popping cost O(1) for a crossbar and
//! O(log latencies) for a mesh, whatever the number of messages travelling, and allocate
//! nothing once the queues have grown to the traffic. A mesh whose links are shared (a port
//! width) delays messages by the traffic they meet, so their due ticks follow no order: they
//! wait in one heap of (due, send order) instead ([`Flight::any_order`]), O(log messages).

use sim_core::Tick;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One message travelling.
#[derive(Debug, Clone, Copy)]
struct Entry {
    due: Tick,
    order: u64,
    slot: u32,
    to_bank: bool,
}

/// A message travelling in any order: (due, send order, slot, towards the bank), earliest
/// first.
type Unordered = BinaryHeap<Reverse<(Tick, u64, u32, bool)>>;

/// The messages travelling through an interconnect.
#[derive(Debug)]
pub struct Flight {
    /// With contended links, messages of one pair no longer arrive in send order: then every
    /// message waits in this one heap of (due, order, slot, towards the bank) instead.
    any: Option<Unordered>,
    /// Latency class of each port pair, `[up * banks + bank]`.
    class_of: Vec<u32>,
    /// Messages of each latency class, in due order.
    classes: Vec<VecDeque<Entry>>,
    /// (due, order, class) of the head of every non-empty class, when there are several.
    heads: BinaryHeap<Reverse<(Tick, u64, u32)>>,
    /// Messages sent so far: the order of each.
    order: u64,
}

impl Flight {
    /// Queues for port pairs of traversal latencies `latency` (any order), room for about
    /// `capacity` messages.
    pub fn new(latency: &[u64], capacity: usize) -> Self {
        let mut distinct = latency.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let class_of = latency.iter().map(|l| distinct.partition_point(|d| d < l) as u32).collect();
        let per = if distinct.len() == 1 { capacity } else { capacity.min(1024) };
        Self {
            any: None,
            class_of,
            classes: distinct.iter().map(|_| VecDeque::with_capacity(per)).collect(),
            heads: BinaryHeap::with_capacity(distinct.len()),
            order: 0,
        }
    }

    /// The same for messages whose due ticks follow no order (contended links): one heap.
    pub fn any_order(capacity: usize) -> Self {
        Self {
            any: Some(BinaryHeap::with_capacity(capacity.min(1 << 16))),
            class_of: Vec::new(),
            classes: Vec::new(),
            heads: BinaryHeap::new(),
            order: 0,
        }
    }

    /// Sends `slot` between the ports of pair `pair`, due at `due` (not before the previous
    /// message of the same latency, unless built by [`Flight::any_order`]).
    #[inline]
    pub fn push(&mut self, pair: usize, due: Tick, slot: u32, to_bank: bool) {
        if self.any.is_some() {
            self.push_any(due, slot, to_bank);
            return;
        }
        self.order += 1;
        let c = self.class_of[pair];
        let q = &mut self.classes[c as usize];
        debug_assert!(q.back().is_none_or(|e| e.due <= due), "messages of one latency arrive in order");
        let first = q.is_empty();
        q.push_back(Entry { due, order: self.order, slot, to_bank });
        if first && self.classes.len() > 1 {
            self.heads.push(Reverse((due, self.order, c)));
        }
    }

    /// [`Flight::push`] into the one heap of [`Flight::any_order`].
    #[inline(never)]
    fn push_any(&mut self, due: Tick, slot: u32, to_bank: bool) {
        self.order += 1;
        if let Some(any) = &mut self.any {
            any.push(Reverse((due, self.order, slot, to_bank)));
        }
    }

    /// When the next message arrives, if one travels.
    #[inline]
    pub fn next_due(&self) -> Option<Tick> {
        if let Some(any) = &self.any {
            return any.peek().map(|Reverse((due, ..))| *due);
        }
        if self.classes.len() == 1 {
            self.classes[0].front().map(|e| e.due)
        } else {
            self.heads.peek().map(|Reverse((due, ..))| *due)
        }
    }

    /// The next message that has arrived by `now`: its slot and whether it travels towards the
    /// bank.
    #[inline]
    pub fn pop_arrived(&mut self, now: Tick) -> Option<(u32, bool)> {
        if let Some(any) = &mut self.any {
            return match any.peek() {
                Some(&Reverse((due, _, slot, to_bank))) if due <= now => {
                    any.pop();
                    Some((slot, to_bank))
                }
                _ => None,
            };
        }
        let c = if self.classes.len() == 1 {
            0
        } else {
            match self.heads.peek() {
                Some(&Reverse((due, _, c))) if due <= now => {
                    self.heads.pop();
                    c as usize
                }
                _ => return None,
            }
        };
        let several = self.classes.len() > 1;
        let q = &mut self.classes[c];
        // With several classes, the head popped above is this front and is due.
        let e = *q.front().filter(|e| e.due <= now)?;
        q.pop_front();
        if several && let Some(next) = q.front() {
            self.heads.push(Reverse((next.due, next.order, c as u32)));
        }
        Some((e.slot, e.to_bank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn any_order_releases_by_due_then_send_order() {
        let mut f = Flight::any_order(8);
        for (slot, due) in [(0, 30), (1, 10), (2, 30), (3, 20)] {
            f.push(0, due, slot, slot % 2 == 0);
        }
        assert_eq!(f.next_due(), Some(10));
        assert_eq!(f.pop_arrived(25), Some((1, false)));
        assert_eq!(f.pop_arrived(25), Some((3, false)));
        assert_eq!(f.pop_arrived(25), None);
        assert_eq!(f.pop_arrived(30), Some((0, true)));
        assert_eq!(f.pop_arrived(30), Some((2, true)));
        assert_eq!(f.next_due(), None);
    }

    proptest! {
        /// Pops in the order a heap of (due, order) would, for any mix of latencies.
        #[test]
        fn releases_in_due_then_send_order(
            lats in prop::collection::vec(0u64..5, 1..6),
            sends in prop::collection::vec((0u64..3, any::<u16>()), 1..200),
        ) {
            let mut f = Flight::new(&lats, 8);
            let mut model = std::collections::BinaryHeap::new();
            let (mut now, mut order, mut got, mut want) = (0u64, 0u64, vec![], vec![]);
            for (i, (step, pick)) in sends.into_iter().enumerate() {
                now += step;
                let pair = pick as usize % lats.len();
                let due = now + lats[pair];
                order += 1;
                f.push(pair, due, i as u32, pick % 2 == 0);
                model.push(Reverse((due, order, i as u32, pick % 2 == 0)));
                while let Some(x) = f.pop_arrived(now) {
                    got.push(x);
                }
                while let Some(&Reverse((d, _, s, b))) = model.peek() {
                    if d > now {
                        break;
                    }
                    model.pop();
                    want.push((s, b));
                }
                prop_assert_eq!(f.next_due(), model.peek().map(|Reverse((d, ..))| *d));
            }
            while let Some(x) = f.pop_arrived(u64::MAX) {
                got.push(x);
            }
            while let Some(Reverse((_, _, s, b))) = model.pop() {
                want.push((s, b));
            }
            prop_assert_eq!(got, want);
        }
    }
}
