//! Inputs read from real datasets (`traces/`): the Cora citation graph as an edge list and
//! FB15k-237's test split as integer triples give the counts their READMEs state, and bad
//! lines are errors naming the line.

use compiler::graph::{GraphFormat, parse_edge_list};
use compiler::{EmbeddingBagInstance, GraphSpec, WorkloadSpec, parse_triples};
use sim_core::SeedTree;

fn trace(path: &str) -> String {
    let p = format!("{}/../traces/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn cora_has_2708_vertices_and_5429_citations() {
    let text = trace("cora/cora.cites");
    let g = parse_edge_list(&text, GraphFormat::Cora, false, false, None).unwrap();
    assert_eq!((g.vertices, g.edges.len()), (2708, 5429));
    // Line 1 is `35 1033`: paper 1033 (vertex 1) cites paper 35 (vertex 0).
    assert_eq!(g.edges[0], (1, 0));
    let cited_35 = g.edges.iter().filter(|&&(_, d)| d == 0).count();
    assert_eq!(cited_35, 166, "paper 35's citations");
    assert!(g.edges.iter().all(|&(s, d)| s != d), "no self-loops");
    // Both directions: 10,858 edges; without repeats, the 5,278 undirected pairs twice.
    let both = parse_edge_list(&text, GraphFormat::Cora, true, false, None).unwrap();
    assert_eq!(both.edges.len(), 2 * 5429);
    assert_eq!(both.edges[..2], [(1, 0), (0, 1)], "each edge, then its reverse");
    let undirected = parse_edge_list(&text, GraphFormat::Cora, true, true, Some(2708)).unwrap();
    assert_eq!(undirected.edges.len(), 2 * 5278);
    let pairs: std::collections::HashSet<_> =
        undirected.edges.iter().map(|&(s, d)| (s.min(d), s.max(d))).collect();
    assert_eq!(pairs.len(), 5278);
}

#[test]
fn the_shipped_cora_workload_aggregates_every_paper() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/workloads/gnn-cora.toml");
    let mut spec: WorkloadSpec = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // Not read yet: an error naming the key, not a graph of no vertices.
    assert_eq!(spec.resolved().unwrap_err().field, "graph.file");
    let Some(GraphSpec::File(g)) = &mut spec.graph else { panic!("a file graph") };
    g.load_text(&trace("cora/cora.cites")).unwrap();
    let spec = spec.resolved().unwrap();
    assert_eq!((spec.tables, spec.rows, spec.batch, spec.dim), (1, 2708, 2708, 128));
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(1));
    assert_eq!(inst.offsets.len(), 2709);
    assert_eq!(inst.indices.len(), 10556);
    let max = inst.offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert_eq!(max, 168);
}

#[test]
fn snap_edge_lists_and_bad_graph_lines() {
    let text = "# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n1\t0\r\n\n2 5\n";
    let g = parse_edge_list(text, GraphFormat::Snap, false, false, None).unwrap();
    assert_eq!((g.vertices, g.edges.clone()), (6, vec![(0, 1), (1, 0), (2, 5)]));
    let g = parse_edge_list(text, GraphFormat::Snap, true, true, None).unwrap();
    assert_eq!(g.edges, [(0, 1), (1, 0), (2, 5), (5, 2)]);
    for (text, format, vertices, line, want) in [
        ("0 1\n1 2 3\n", GraphFormat::Snap, None, 2, "expected `from to` (2 fields), found 3"),
        ("0 1\n1 x\n", GraphFormat::Snap, None, 2, "\"x\" is not a vertex id"),
        ("0 1\n-1 2\n", GraphFormat::Snap, None, 2, "\"-1\" is not a vertex id"),
        ("0 1\n\n1 9\n", GraphFormat::Snap, Some(5), 3, "vertex 9 is not below vertices = 5"),
        ("a b\nc\n", GraphFormat::Cora, None, 2, "expected `cited citing` (2 fields), found 1"),
        ("a b\nc d\n", GraphFormat::Cora, Some(3), 2, "paper \"d\" is distinct paper 4, beyond vertices = 3"),
        ("a b\nc d\n", GraphFormat::Cora, Some(5), 0, "4 distinct papers, but vertices = 5"),
        ("# nothing\n", GraphFormat::Snap, None, 0, "no edges"),
    ] {
        let (l, why) = parse_edge_list(text, format, false, false, vertices).unwrap_err();
        assert_eq!(l, line, "{why}");
        assert!(why.contains(want), "{want}: {why}");
    }
}

#[test]
fn fb15k237_test_split_has_20466_triples_within_its_ids() {
    let triples = parse_triples(&trace("fb15k-237/test.ids.tsv"), 14541, 237).unwrap();
    assert_eq!(triples.len(), 20466);
    assert_eq!(triples[0], [4092, 23, 13397]);
    assert!(triples.iter().all(|&[h, r, t]| h < 14541 && r < 237 && t < 14541));
    assert_eq!(triples.iter().map(|t| t[0].max(t[2])).max(), Some(14540));
    assert_eq!(triples.iter().map(|t| t[1]).max(), Some(236));
    // The shipped workload scores the first `batch` against 64 drawn negatives each.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/workloads/kg-fb15k237.toml");
    let spec: WorkloadSpec = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let spec = spec.resolved().unwrap();
    assert_eq!((spec.rows, spec.relations, spec.negatives), (14541, 237, 64));
    let inst = EmbeddingBagInstance::from_triples(&spec, &triples, &SeedTree::new(1)).unwrap();
    let kg = inst.kg.as_ref().unwrap();
    assert_eq!(kg.heads.len(), spec.batch as usize);
    assert_eq!((kg.heads[0], kg.relations[0], inst.indices[0]), (4092, 23, 13397));
    assert_eq!(inst.indices.len(), spec.batch as usize * 65);
    assert!(inst.indices.iter().all(|&t| t < 14541));
    // More triples than the file holds.
    let big = WorkloadSpec { batch: 20467, ..spec };
    let e = EmbeddingBagInstance::from_triples(&big, &triples, &SeedTree::new(1)).unwrap_err();
    assert_eq!(e.field, "batch");
    assert!(e.message.contains("20467 triples, but the triples file has 20466"), "{e}");
}

#[test]
fn bad_triple_lines_are_named() {
    for (text, line, want) in [
        ("0\t1\t2\n0\t1\n", 2, "expected `head relation tail` (3 fields), found 2"),
        ("0\t1\t2\n\n# c\n0\tx\t2\n", 4, "relation \"x\" is not an id"),
        ("0\t1\t2\n10\t1\t2\n", 2, "head 10 is not below rows = 10"),
        ("0\t5\t2\n", 1, "relation 5 is not below relations = 5"),
        ("0\t1\t12\r\n", 1, "tail 12 is not below rows = 10"),
        ("", 0, "no triples"),
    ] {
        let (l, why) = parse_triples(text, 10, 5).unwrap_err();
        assert_eq!(l, line, "{why}");
        assert!(why.contains(want), "{want}: {why}");
    }
    assert_eq!(parse_triples("0\t1\t2\r\n3 4 5\n", 10, 5).unwrap(), [[0, 1, 2], [3, 4, 5]]);
}
