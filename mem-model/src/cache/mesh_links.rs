//! A mesh's links under a port width: XY routes and each directed link's busy cycles.
//!
//! Contract: [`MeshLinks::traverse`] books a message of `flits` cycles onto every link of its
//! dimension-order route (X first, then Y; the way back is routed the same way, so it may take
//! other links), hop by hop: each link carries it in the first `flits` free cycles at or after
//! the cycle it reaches that link (first fit, so a message may use a gap that an earlier booking
//! left), and it reaches the next node `cycles_per_hop` after its first cycle there
//! (cut-through). It returns the cycle the message reaches its destination node; on idle links
//! that is `start + base_cycles + hops * cycles_per_hop`, the latency of
//! [`super::Topology::latency_table`]. Bookings are made in the order messages enter the
//! network, which the crossbar keeps deterministic, and never before the current cycle. First
//! fit could let a short message overtake a longer one sent before it between the same two
//! ports (into a gap the longer one did not fit): links keep their messages in order, so a
//! message never reaches its destination before the one sent before it on the same route,
//! waiting at the end of the route if it must (its links' bookings stay as made).
//!
//! Each link keeps its busy cycles as sorted, disjoint intervals, dropped once they are past:
//! a booking costs a walk over the intervals still ahead on that link, few unless it is
//! congested. Links are numbered `node * 4 + direction` (east, west, south, north; rows grow
//! southwards).

use std::collections::VecDeque;

/// Directions, in link numbering order.
const EAST: u64 = 0;
const WEST: u64 = 1;
const SOUTH: u64 = 2;
const NORTH: u64 = 3;

/// Busy cycles of one directed link: sorted, disjoint, non-adjacent `[start, end)` intervals.
#[derive(Debug, Clone, Default)]
struct Busy(VecDeque<(u64, u64)>);

impl Busy {
    /// Books the first `flits` free cycles at or after `earliest` (`now`: the current cycle,
    /// before which nothing books); returns the first of them.
    fn book(&mut self, earliest: u64, flits: u64, now: u64) -> u64 {
        let q = &mut self.0;
        while q.front().is_some_and(|&(_, end)| end <= now) {
            q.pop_front();
        }
        let mut t = earliest;
        let mut i = 0;
        while i < q.len() && q[i].1 <= t {
            i += 1;
        }
        // From here every interval ends after `t`: the message fits before one, or goes after.
        while i < q.len() {
            let (start, end) = q[i];
            if t + flits <= start {
                break;
            }
            t = t.max(end);
            i += 1;
        }
        let end = t + flits;
        let joins_before = i > 0 && q[i - 1].1 == t;
        let joins_after = i < q.len() && q[i].0 == end;
        match (joins_before, joins_after) {
            (true, true) => {
                q[i - 1].1 = q[i].1;
                q.remove(i);
            }
            (true, false) => q[i - 1].1 = end,
            (false, true) => q[i].0 = t,
            (false, false) => q.insert(i, (t, end)),
        }
        t
    }
}

/// The links of a `cols`-wide mesh and the nodes of its ports (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct MeshLinks {
    cols: u64,
    base_cycles: u64,
    cycles_per_hop: u64,
    /// Node of each upstream and each downstream port.
    up_nodes: Vec<u64>,
    down_nodes: Vec<u64>,
    links: Vec<Busy>,
    /// Per route (`(up * downs + down) * 2 + towards the downstream port`), the cycle its last
    /// message arrived.
    last: Vec<u64>,
}

impl MeshLinks {
    /// The links of a `cols` x `rows` mesh whose ports sit at `up_nodes` and `down_nodes`.
    pub(crate) fn new(
        cols: u32,
        rows: u32,
        base_cycles: u64,
        cycles_per_hop: u64,
        up_nodes: Vec<u64>,
        down_nodes: Vec<u64>,
    ) -> MeshLinks {
        let nodes = u64::from(cols) * u64::from(rows);
        let routes = 2 * up_nodes.len() * down_nodes.len();
        MeshLinks {
            last: vec![0; routes],
            cols: u64::from(cols).max(1),
            base_cycles,
            cycles_per_hop,
            up_nodes,
            down_nodes,
            links: vec![Busy::default(); (nodes * 4) as usize],
        }
    }

    /// Books a message of `flits` cycles a link from upstream port `up` to downstream port
    /// `down` (or back, `to_down` false) entering at cycle `now`; returns the cycle it reaches
    /// the far port's node and the cycles it waited on the way (for links, and for the message
    /// before it on its route).
    pub(crate) fn traverse(
        &mut self,
        up: usize,
        down: usize,
        to_down: bool,
        flits: u64,
        now: u64,
    ) -> (u64, u64) {
        let (u, d) = (self.up_nodes[up], self.down_nodes[down]);
        let (from, to) = if to_down { (u, d) } else { (d, u) };
        let (mut x, mut y) = (from % self.cols, from / self.cols);
        let (tx, ty) = (to % self.cols, to / self.cols);
        let mut t = now.saturating_add(self.base_cycles);
        let mut waited = 0;
        while (x, y) != (tx, ty) {
            let node = y * self.cols + x;
            let dir = if x < tx {
                x += 1;
                EAST
            } else if x > tx {
                x -= 1;
                WEST
            } else if y < ty {
                y += 1;
                SOUTH
            } else {
                y -= 1;
                NORTH
            };
            let start = self.links[(node * 4 + dir) as usize].book(t, flits, now);
            waited += start - t;
            t = start.saturating_add(self.cycles_per_hop);
        }
        let route = (up * self.down_nodes.len() + down) * 2 + usize::from(to_down);
        let arrive = t.max(self.last[route]);
        self.last[route] = arrive;
        (arrive, waited + (arrive - t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bookings_fill_gaps_first_fit() {
        let mut b = Busy::default();
        assert_eq!(b.book(10, 2, 0), 10); // [10, 12)
        assert_eq!(b.book(14, 2, 0), 14); // [14, 16)
        assert_eq!(b.book(10, 2, 0), 12); // the gap [12, 14)
        assert_eq!(b.0, VecDeque::from([(10, 16)]));
        assert_eq!(b.book(11, 3, 0), 16);
        // Past intervals are dropped.
        assert_eq!(b.book(30, 1, 25), 30);
        assert_eq!(b.0, VecDeque::from([(30, 31)]));
    }

    #[test]
    fn an_idle_mesh_costs_base_plus_hops() {
        // 4 x 3; upstream port at node 0 (0, 0), downstream at node 11 (3, 2): 5 hops.
        let mut m = MeshLinks::new(4, 3, 1, 2, vec![0], vec![11]);
        assert_eq!(m.traverse(0, 0, true, 4, 100), (100 + 1 + 5 * 2, 0));
        assert_eq!(m.traverse(0, 0, false, 4, 200), (200 + 1 + 5 * 2, 0));
        // A second message right behind the first waits for the first link, then follows it.
        let mut m = MeshLinks::new(4, 1, 0, 1, vec![0], vec![3]);
        assert_eq!(m.traverse(0, 0, true, 4, 0), (3, 0));
        assert_eq!(m.traverse(0, 0, true, 4, 0), (7, 4));
    }

    #[test]
    fn a_short_message_does_not_overtake_a_longer_one_on_its_route() {
        // A 6 x 1 row, 2 cycles to enter, 1 a hop: upstream ports at nodes 3 and 4, the
        // downstream port at node 5. Port 1 (node 4) books the link 4->5 for cycles 3..6 and
        // 7..20, leaving a one-cycle gap at 6.
        let mut m = MeshLinks::new(6, 1, 2, 1, vec![3, 4], vec![5]);
        assert_eq!(m.traverse(1, 0, true, 3, 1), (4, 0));
        assert_eq!(m.traverse(1, 0, true, 13, 5), (8, 0));
        // Port 0 sends three cycles of message then one: the first takes the link 3->4 at
        // 2..5, reaches 4->5 at 3, fits no gap and goes at 20, arriving at 21.
        assert_eq!(m.traverse(0, 0, true, 3, 0), (21, 17));
        // The second takes 3->4 at 5 and reaches 4->5 at 6, where it fits the gap (7 on its
        // own), but it arrives behind the first: 21.
        assert_eq!(m.traverse(0, 0, true, 1, 0), (21, 17));
    }

    proptest! {
        /// First fit over a plain bitmap of busy cycles gives the same cycles.
        #[test]
        fn agrees_with_a_bitmap(ops in prop::collection::vec((0u64..40, 1u64..6, 0u64..3), 1..80)) {
            let mut b = Busy::default();
            let mut busy = vec![false; 4096];
            let mut now = 0;
            for (ahead, flits, step) in ops {
                now += step;
                let earliest = now + ahead;
                let got = b.book(earliest, flits, now);
                let want = (earliest..).find(|&t| (t..t + flits).all(|c| !busy[c as usize])).unwrap();
                prop_assert_eq!(got, want);
                for c in want..want + flits {
                    busy[c as usize] = true;
                }
                // Disjoint, sorted, non-adjacent.
                prop_assert!(b.0.iter().zip(b.0.iter().skip(1)).all(|(a, c)| a.1 < c.0));
            }
        }
    }
}
