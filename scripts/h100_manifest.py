#!/usr/bin/env python3
"""Prepares the inputs of scripts/h100_measure.py from a dae-sim run (no GPU needed).

Usage: h100_manifest.py DUMP RESULTS.json OUT_DIR

DUMP is the `--dump-outputs` directory of `dae-sim --config configs/h100-vs-dae.toml
--dump-outputs DUMP --dump-inputs`, RESULTS.json that run's results (for the H100 model's
times). OUT_DIR receives, per workload the script measures, its input arrays and
`manifest.json`: kind (bag, kg or scatter), op, dim, dtype, the row count of each table (read
from configs/workloads/<name>.toml) and the model's simulated and analytic times.
"""

import json
import os
import shutil
import sys
import tomllib

WORKLOADS = ["dlrm-rm1", "dlrm-rm2", "dlrm-rm3", "dlrm-mlperf-v2", "gnn-cora", "gnn-rmat", "sparse-attention",
             "kg-distmult", "kg-fb15k237", "gnn-scatter"]
INPUTS = ["offsets", "indices", "bag_tables", "weights", "heads", "relations", "edges"]


def table_rows(t):
    """Rows of each table the workload gathers from, in the simulator's stacking order."""
    op = t["op"]
    if op == "embedding_bag":
        return [x["rows"] for x in t["table_indices"]] if "table_indices" in t else [t["rows"]] * t["tables"]
    if op == "sparse_attention":
        return [t["rows"]] * t["tables"]
    if op in ("gnn_aggregate", "gnn_scatter"):
        g = t["graph"]
        return [g.get("vertices") or 2 ** g["scale"]]
    if op == "kg_score":
        return [t["rows"], t["relations"]]
    raise ValueError(f"op {op} is not measured")


def main():
    dump, results, out = sys.argv[1], sys.argv[2], sys.argv[3]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "workloads")
    runs = {r["workload"]: r for r in json.load(open(results))["runs"] if r["model"] == "cycle-timing"}
    kinds = {"gnn_aggregate": "bag", "gnn_scatter": "scatter", "kg_score": "kg"}
    manifest = {}
    for w in WORKLOADS:
        with open(os.path.join(root, w + ".toml"), "rb") as f:
            t = tomllib.load(f)
        manifest[w] = {
            "kind": kinds.get(t["op"], "bag"), "op": t["op"], "dim": t["dim"], "dtype": t.get("dtype", "f32"),
            "table_rows": table_rows(t), "weighted": t["op"] == "sparse_attention",
            "model_sim_us": runs[w]["sim_time_ps"] / 1e6, "model_analytic_us": runs[w]["analytic_time_ps"] / 1e6,
            "lookups": runs[w]["lookups"], "model_bytes": runs[w]["bytes"],
        }
        os.makedirs(os.path.join(out, w), exist_ok=True)
        for name in INPUTS:
            src = os.path.join(dump, w, "inputs", name + ".npy")
            if os.path.exists(src):
                shutil.copy(src, os.path.join(out, w, name + ".npy"))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
