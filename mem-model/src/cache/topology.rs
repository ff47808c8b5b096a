//! Interconnect topologies: the traversal latency between each upstream and downstream port.
//!
//! A crossbar costs the same fixed number of cycles between any pair of ports. A 2D mesh costs
//! `base_cycles + hops * cycles_per_hop`, where hops is the Manhattan distance between the two
//! ports' nodes (dimension-order XY routing; with a port width, its links are shared, see
//! [`super::mesh_links`]). Mesh nodes are numbered row-major:
//! node `i` sits at column `i % cols`, row `i / cols`. Unless the configuration places them
//! explicitly, the `n` upstream ports are spread evenly over the nodes (port `u` at node
//! `u * nodes / n`) and so are the downstream ports; with as many ports of each side as nodes,
//! port `i` of each side sits at node `i` (a tiled chip: each tile a core and an LLC bank).

use super::mesh_links::MeshLinks;
use serde::Deserialize;
use thiserror::Error;

/// Most nodes a mesh may have.
pub const MAX_MESH_NODES: u64 = 1 << 16;

/// Most cycles a crossbar traversal, a mesh hop or a mesh's base latency may take (as a
/// cache's hit latency: beyond it a run would only hit the time limit).
pub const MAX_TOPOLOGY_CYCLES: u64 = 1_000_000;

/// How the ports of a [`super::Crossbar`] are connected, and what a traversal costs.
///
/// ```toml
/// topology = { kind = "crossbar", cycles = 4 }
/// topology = { kind = "mesh", cols = 4, rows = 4, cycles_per_hop = 2, base_cycles = 1 }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Topology {
    /// Every pair of ports is `cycles` apart.
    Crossbar {
        /// Traversal latency each way, in cycles.
        cycles: u64,
    },
    /// A `cols` x `rows` mesh: `base_cycles + hops * cycles_per_hop` each way.
    Mesh {
        /// Nodes per row.
        cols: u32,
        /// Rows.
        rows: u32,
        /// Cycles per hop between neighbouring nodes.
        cycles_per_hop: u64,
        /// Cycles added to every traversal (injection and ejection).
        #[serde(default)]
        base_cycles: u64,
        /// Node of each upstream port (default: spread evenly, see the module docs).
        #[serde(default)]
        upstream_nodes: Option<Vec<u32>>,
        /// Node of each downstream port (default: spread evenly).
        #[serde(default)]
        downstream_nodes: Option<Vec<u32>>,
    },
}

/// Why a topology does not fit its ports.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TopologyError {
    /// A mesh dimension is zero.
    #[error("mesh {field} must be at least 1")]
    ZeroDimension {
        /// `cols` or `rows`.
        field: &'static str,
    },
    /// The mesh is larger than supported.
    #[error("mesh of {cols} x {rows} nodes is above the supported maximum of {MAX_MESH_NODES} nodes")]
    TooLarge {
        /// Columns.
        cols: u32,
        /// Rows.
        rows: u32,
    },
    /// A latency is above [`MAX_TOPOLOGY_CYCLES`].
    #[error("{field} ({cycles}) is above the supported maximum of {MAX_TOPOLOGY_CYCLES} cycles")]
    TooSlow {
        /// `cycles`, `cycles_per_hop` or `base_cycles`.
        field: &'static str,
        /// The value given.
        cycles: u64,
    },
    /// An explicit placement lists the wrong number of nodes.
    #[error("mesh {field} lists {got} nodes but there are {want} ports")]
    NodeCount {
        /// `upstream_nodes` or `downstream_nodes`.
        field: &'static str,
        /// Nodes listed.
        got: usize,
        /// Ports on that side.
        want: usize,
    },
    /// An explicit placement names a node outside the mesh.
    #[error("mesh {field}[{index}] = {node} is outside the {nodes} nodes of the mesh")]
    NodeOutOfRange {
        /// `upstream_nodes` or `downstream_nodes`.
        field: &'static str,
        /// Position in the list.
        index: usize,
        /// The node named.
        node: u32,
        /// Nodes in the mesh.
        nodes: u64,
    },
}

impl TopologyError {
    /// The configuration key at fault, under the crossbar's table (`topology.cols` ...).
    pub fn key(&self) -> &'static str {
        match self {
            TopologyError::ZeroDimension { field: "cols" } => "topology.cols",
            TopologyError::ZeroDimension { .. } => "topology.rows",
            TopologyError::TooLarge { .. } => "topology",
            TopologyError::TooSlow { field: "cycles", .. } => "topology.cycles",
            TopologyError::TooSlow { field: "cycles_per_hop", .. } => "topology.cycles_per_hop",
            TopologyError::TooSlow { .. } => "topology.base_cycles",
            TopologyError::NodeCount { field: "upstream_nodes", .. }
            | TopologyError::NodeOutOfRange { field: "upstream_nodes", .. } => "topology.upstream_nodes",
            TopologyError::NodeCount { .. } | TopologyError::NodeOutOfRange { .. } => {
                "topology.downstream_nodes"
            }
        }
    }
}

impl Topology {
    /// Checks what does not depend on the ports: dimensions, size, latencies, and that every
    /// explicitly placed port sits on the mesh.
    pub fn check(&self) -> Result<(), TopologyError> {
        let slow = |field, cycles: u64| {
            if cycles > MAX_TOPOLOGY_CYCLES { Err(TopologyError::TooSlow { field, cycles }) } else { Ok(()) }
        };
        match self {
            Topology::Crossbar { cycles } => slow("cycles", *cycles),
            Topology::Mesh { cols, rows, cycles_per_hop, base_cycles, upstream_nodes, downstream_nodes } => {
                let nodes = mesh_nodes(*cols, *rows)?;
                slow("cycles_per_hop", *cycles_per_hop)?;
                slow("base_cycles", *base_cycles)?;
                for (field, list) in
                    [("upstream_nodes", upstream_nodes), ("downstream_nodes", downstream_nodes)]
                {
                    if let Some(list) = list {
                        place(field, Some(list), list.len(), nodes)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Traversal latency in cycles from upstream port `u` to downstream port `d` (and back), for
    /// every pair, as a table indexed `u * downstream + d`.
    pub fn latency_table(&self, upstream: usize, downstream: usize) -> Result<Vec<u64>, TopologyError> {
        match self {
            Topology::Crossbar { cycles } => Ok(vec![*cycles; upstream * downstream]),
            Topology::Mesh { cols, rows, cycles_per_hop, base_cycles, upstream_nodes, downstream_nodes } => {
                let (ups, downs) =
                    port_nodes(*cols, *rows, (upstream_nodes, upstream), (downstream_nodes, downstream))?;
                let at = |n: u64| (n % u64::from(*cols), n / u64::from(*cols));
                let mut table = Vec::with_capacity(upstream * downstream);
                for &u in &ups {
                    for &d in &downs {
                        let ((ux, uy), (dx, dy)) = (at(u), at(d));
                        let hops = ux.abs_diff(dx) + uy.abs_diff(dy);
                        table.push(base_cycles.saturating_add(hops.saturating_mul(*cycles_per_hop)));
                    }
                }
                Ok(table)
            }
        }
    }
}

impl Topology {
    /// A mesh's directed links and its ports' nodes, for a crossbar with a port width
    /// ([`super::mesh_links`]); `None` for a crossbar topology, which has no links.
    pub(crate) fn mesh_links(
        &self,
        upstream: usize,
        downstream: usize,
    ) -> Result<Option<MeshLinks>, TopologyError> {
        match self {
            Topology::Crossbar { .. } => Ok(None),
            Topology::Mesh { cols, rows, cycles_per_hop, base_cycles, upstream_nodes, downstream_nodes } => {
                let (ups, downs) =
                    port_nodes(*cols, *rows, (upstream_nodes, upstream), (downstream_nodes, downstream))?;
                Ok(Some(MeshLinks::new(*cols, *rows, *base_cycles, *cycles_per_hop, ups, downs)))
            }
        }
    }
}

/// The node of each upstream and each downstream port of a `cols` x `rows` mesh (each side: its
/// explicit placement, if any, and its port count), checked.
fn port_nodes(
    cols: u32,
    rows: u32,
    (up_nodes, upstream): (&Option<Vec<u32>>, usize),
    (down_nodes, downstream): (&Option<Vec<u32>>, usize),
) -> Result<(Vec<u64>, Vec<u64>), TopologyError> {
    let nodes = mesh_nodes(cols, rows)?;
    let ups = place("upstream_nodes", up_nodes.as_deref(), upstream, nodes)?;
    let downs = place("downstream_nodes", down_nodes.as_deref(), downstream, nodes)?;
    Ok((ups, downs))
}

/// The nodes of a `cols` x `rows` mesh, checked.
fn mesh_nodes(cols: u32, rows: u32) -> Result<u64, TopologyError> {
    for (field, v) in [("cols", cols), ("rows", rows)] {
        if v == 0 {
            return Err(TopologyError::ZeroDimension { field });
        }
    }
    let nodes = u64::from(cols) * u64::from(rows);
    if nodes > MAX_MESH_NODES {
        return Err(TopologyError::TooLarge { cols, rows });
    }
    Ok(nodes)
}

/// The node of each of `ports` ports: the explicit list, checked, or spread evenly.
fn place(
    field: &'static str,
    given: Option<&[u32]>,
    ports: usize,
    nodes: u64,
) -> Result<Vec<u64>, TopologyError> {
    match given {
        Some(list) => {
            if list.len() != ports {
                return Err(TopologyError::NodeCount { field, got: list.len(), want: ports });
            }
            list.iter()
                .enumerate()
                .map(|(index, &node)| {
                    if u64::from(node) < nodes {
                        Ok(u64::from(node))
                    } else {
                        Err(TopologyError::NodeOutOfRange { field, index, node, nodes })
                    }
                })
                .collect()
        }
        None => Ok((0..ports as u64).map(|i| i * nodes / ports.max(1) as u64).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mesh(cols: u32, rows: u32) -> Topology {
        Topology::Mesh {
            cols,
            rows,
            cycles_per_hop: 2,
            base_cycles: 1,
            upstream_nodes: None,
            downstream_nodes: None,
        }
    }

    #[test]
    fn crossbar_is_flat() {
        assert_eq!(Topology::Crossbar { cycles: 5 }.latency_table(2, 3).unwrap(), vec![5; 6]);
    }

    #[test]
    fn mesh_latency_is_base_plus_manhattan_hops() {
        // 4 x 4, 16 upstream ports at nodes 0..16, 4 downstream at nodes 0, 4, 8, 12 (column 0).
        let t = mesh(4, 4).latency_table(16, 4).unwrap();
        // Upstream 15 sits at (3, 3); downstream 0 at (0, 0): 6 hops.
        assert_eq!(t[15 * 4], 1 + 6 * 2);
        // Upstream 4 at (0, 1), downstream 1 at (0, 1): no hop.
        assert_eq!(t[4 * 4 + 1], 1);
        // Upstream 6 at (2, 1), downstream 3 at (0, 3): 4 hops.
        assert_eq!(t[6 * 4 + 3], 1 + 4 * 2);
    }

    #[test]
    fn explicit_placement_is_checked() {
        let mut m = mesh(2, 2);
        if let Topology::Mesh { upstream_nodes, .. } = &mut m {
            *upstream_nodes = Some(vec![3, 4]);
        }
        assert_eq!(
            m.latency_table(2, 1).unwrap_err().to_string(),
            "mesh upstream_nodes[1] = 4 is outside the 4 nodes of the mesh"
        );
        assert_eq!(
            m.latency_table(3, 1).unwrap_err(),
            TopologyError::NodeCount { field: "upstream_nodes", got: 2, want: 3 }
        );
        assert_eq!(mesh(0, 2).latency_table(1, 1).unwrap_err().to_string(), "mesh cols must be at least 1");
        // Without the ports: the placement's range, not its length.
        assert_eq!(m.check().unwrap_err().key(), "topology.upstream_nodes");
        assert_eq!(mesh(2, 0).check().unwrap_err().key(), "topology.rows");
    }

    #[test]
    fn latencies_are_bounded() {
        let limit = MAX_TOPOLOGY_CYCLES;
        assert_eq!(Topology::Crossbar { cycles: limit }.check(), Ok(()));
        let err = Topology::Crossbar { cycles: limit + 1 }.check().unwrap_err();
        assert_eq!(err.key(), "topology.cycles");
        assert_eq!(err.to_string(), "cycles (1000001) is above the supported maximum of 1000000 cycles");
        let mut m = mesh(2, 2);
        if let Topology::Mesh { cycles_per_hop, .. } = &mut m {
            *cycles_per_hop = u64::MAX;
        }
        assert_eq!(m.check().unwrap_err().key(), "topology.cycles_per_hop");
        if let Topology::Mesh { cycles_per_hop, base_cycles, .. } = &mut m {
            (*cycles_per_hop, *base_cycles) = (1, limit + 1);
        }
        assert_eq!(m.check().unwrap_err().key(), "topology.base_cycles");
    }
}
