#!/usr/bin/env python3
"""Times a real GPU on dae-sim's workloads and calibration microbenchmarks (PyTorch, CuPy).

Usage: h100_measure.py DIR OUT.json

DIR holds `manifest.json` (per workload: kind, table rows, dim, dtype and the GPU model's own
times, written next to the inputs) and one folder per workload with the exact inputs the
simulator ran (`dae-sim --dump-outputs D --dump-inputs`: offsets, indices, bag tables and, where
the op has them, weights, heads, relations, edges). Every kernel is timed on the GPU with CUDA
events, as the median of ITERS calls:

- cold: a 512 MiB write before each call evicts the 50 MB L2, as the simulator starts each
  batch from a cold chip;
- warm: the same call again with the L2 as the previous call left it.

In both, the GPU is kept busy while the call is queued (the flush, or a spin), so the figure is
the kernels' time, not the host's launch overhead. Tables are full size and left uninitialised
(values do not change a gather's time). Microbenchmarks: pointer chases at several footprints
(one thread, a random cycle of 128 B lines), a streaming read, and random row gathers.
"""

import json
import os
import sys
import time

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

ITERS = 15
DEV = torch.device("cuda")
FLUSH = torch.empty(512 * 2**20 // 4, dtype=torch.float32, device=DEV)
DTYPES = {"f32": torch.float32, "f16": torch.float16}


def timed(fn, cold, iters=ITERS):
    """Median and minimum of `iters` calls of `fn`, in microseconds."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if cold:
            FLUSH.zero_()
        else:
            torch.cuda._sleep(400_000)  # about 200 us: the call is queued before it starts
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    times.sort()
    return times[len(times) // 2], times[0]


def kernels(fn):
    """The CUDA kernels one call of `fn` launches: (name, device microseconds)."""
    FLUSH.zero_()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t > 0 and "zero" not in ev.key.lower():
            out.append((ev.key[:120], round(t, 2)))
    return out


def npy(d, name):
    p = os.path.join(d, name + ".npy")
    return np.load(p) if os.path.exists(p) else None


def bag_workload(d, m):
    """An embedding bag over the stacked tables: one F.embedding_bag call."""
    off, idx, bt = npy(d, "offsets"), npy(d, "indices"), npy(d, "bag_tables")
    rows = np.array(m["table_rows"], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(rows)[:-1]])
    ids = torch.from_numpy(base[np.repeat(bt, np.diff(off))] + idx).to(DEV)
    offsets = torch.from_numpy(off).to(DEV)
    dtype = DTYPES[m["dtype"]]
    table = torch.empty((int(rows.sum()), m["dim"]), dtype=dtype, device=DEV)
    w = npy(d, "weights")
    weights = torch.from_numpy(w).to(DEV, dtype) if (m["weighted"] and w is not None) else None

    def call():
        return F.embedding_bag(ids, table, offsets, mode="sum", include_last_offset=True, per_sample_weights=weights)

    alt = None
    if m["op"] == "gnn_aggregate":
        # What a GNN library runs: a CSR SpMM (cuSPARSE), which balances high-degree vertices.
        a = torch.sparse_csr_tensor(offsets, ids, torch.ones(len(idx), device=DEV, dtype=dtype),
                                    size=(len(off) - 1, int(rows.sum())))
        alt = ("spmm", lambda: a @ table)
    elif m["weighted"] and (np.diff(off) == np.diff(off)[0]).all():
        # Equal bags: gather every row at once, weight and reduce (no serial walk per bag).
        per, nb = int(np.diff(off)[0]), len(off) - 1
        alt = ("gather_reduce", lambda: (table.index_select(0, ids).view(nb, per, -1) * weights.view(nb, per, 1)).sum(1))
    if alt is None and (m["dtype"], m["dim"]) in (("f32", 32), ("f32", 64), ("f16", 128)):
        # Also FBGEMM's kernel shape (TBE_SRC, its own loop) on the same inputs.
        half = m["dtype"] == "f16"
        k = cp.RawKernel(tbe_source("fbgemm", m["dim"], half), "tbe")
        nb, g = len(off) - 1, m["dim"] // 4
        res = torch.empty((nb, g * 4), device=DEV)
        args = (cp.asarray(table), cp.asarray(ids), cp.asarray(offsets), np.int32(nb), cp.asarray(res))
        alt = ("tbe_fbgemm_loop", lambda: k(((nb * g + 511) // 512,), (512,), args))
    call.alt = alt
    return call, {"table_gib": table.numel() * table.element_size() / 2**30, "bags": len(off) - 1,
                  "lookups": len(idx)}


def kg_workload(d, m):
    """Knowledge-graph scores: head * relation against every candidate tail (gather, multiply,
    batched matrix-vector product)."""
    off, idx = npy(d, "offsets"), npy(d, "indices")
    heads, rels = npy(d, "heads"), npy(d, "relations")
    per = np.diff(off)
    assert (per == per[0]).all(), "candidates per triple differ"
    b, c = len(heads), int(per[0])
    ent = torch.empty((m["table_rows"][0], m["dim"]), device=DEV)
    rel = torch.empty((m["table_rows"][1], m["dim"]), device=DEV)
    h, r, t = (torch.from_numpy(x).to(DEV) for x in (heads, rels, idx))

    def call():
        hr = ent.index_select(0, h) * rel.index_select(0, r)
        tails = ent.index_select(0, t).view(b, c, m["dim"])
        return torch.bmm(tails, hr.unsqueeze(2)).squeeze(2)

    return call, {"triples": b, "candidates": c, "lookups": len(idx) + 2 * b}


def scatter_workload(d, m):
    """Message passing: gather each edge's source row, scatter-add it into its destination."""
    edges = npy(d, "edges")
    src = torch.from_numpy(edges[:, 0].copy()).to(DEV)
    dst_ids, dst_local = np.unique(edges[:, 1], return_inverse=True)
    dst = torch.from_numpy(dst_local.astype(np.int64)).to(DEV)
    x = torch.empty((m["table_rows"][0], m["dim"]), device=DEV)
    out = torch.zeros((len(dst_ids), m["dim"]), device=DEV)

    def call():
        out.zero_()
        out.index_add_(0, dst, x.index_select(0, src))
        return out

    return call, {"edges": len(edges), "destinations": len(dst_ids), "lookups": len(edges)}


CHASE = cp.RawKernel(r"""
extern "C" __global__ void chase(const unsigned long long* next, unsigned long long start,
                                 long long steps, unsigned long long* sink) {
    unsigned long long p = start;
    for (long long i = 0; i < steps; i++) p = next[p];
    sink[0] = p;
}
""", "chase")


ROWS = cp.RawKernel(r"""
extern "C" __global__ void rows(const float4* __restrict__ table, const long long* __restrict__ ids,
                                int vecs, long long n, float4* __restrict__ sink) {
    // Thread k reads 16 B piece k % vecs of row ids[k / vecs]; eight pieces in flight per thread.
    long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long total = n * vecs;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (; k < total; k += 8 * stride) {
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            long long q = k + u * stride;
            v[u] = q < total ? table[ids[q / vecs] * vecs + q % vecs] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            acc.x += v[u].x; acc.y += v[u].y; acc.z += v[u].z; acc.w += v[u].w;
        }
    }
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
""", "rows")


def random_rows(row_bytes, table_bytes=8 << 30, n=1 << 24):
    """Bandwidth of random `row_bytes` rows with many in flight: every thread keeps eight 16 B
    loads outstanding over the whole GPU (the hardware's ceiling for such rows, not a library's)."""
    vecs = row_bytes // 16
    rows = table_bytes // row_bytes
    table = cp.empty(rows * vecs * 4, dtype=cp.float32)
    ids = cp.random.randint(0, rows, n, dtype=cp.int64)
    threads, blocks = 256, 132 * 8
    sink = cp.empty(threads * blocks * 4, dtype=cp.float32)
    flush = cp.empty(512 << 20, dtype=cp.uint8)
    args = (table, ids, np.int32(vecs), np.int64(n), sink)
    ROWS((blocks,), (threads,), args)
    times = []
    for _ in range(ITERS):
        flush.fill(0)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        ROWS((blocks,), (threads,), args)
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    times.sort()
    med = times[len(times) // 2]
    del table, ids, flush
    return {"row_bytes": row_bytes, "rows": n, "median_us": med, "tb_per_s": n * row_bytes / med / 1e6}


TBE_SRC = r"""
extern "C" __global__ void tbe(const VEC* __restrict__ table, const long long* __restrict__ indices,
                               const long long* __restrict__ offsets, int bags, float4* __restrict__ out) {
    // FBGEMM's forward shape: a group of G lanes per bag (32 / G bags a warp), four elements per
    // lane (a float4, or four halves); the group loads G indices, then walks their rows, a
    // shuffle per row. Half rows are only loaded and summed as raw bits: timing, not values.
    constexpr int G = GROUP;
    int lane = threadIdx.x % G;
    long long bag = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / G;
    if (bag >= bags) return;
    unsigned mask = G == 32 ? 0xffffffffu : ((1u << (G % 32)) - 1) << (threadIdx.x % 32 / G * G);
    long long start = offsets[bag], end = offsets[bag + 1];
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long l = start; l < end; l += G) {
        long long mine = l + lane < end ? indices[l + lane] : 0;
        LOOP {
            long long r = __shfl_sync(mask, mine, j, G);
            VEC v = table[r * G + lane];
            ACC
        }
    }
    out[bag * G + lane] = acc;
}
"""

F32_ACC = "acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;"
F16_ACC = "acc.x += __int_as_float(v.x); acc.y += __int_as_float(v.y);"


def tbe_source(loop, dim=32, half=False):
    """TBE_SRC for rows of `dim` f32 (or f16) values, its row loop written as TBE_LOOPS[loop]."""
    return (TBE_SRC.replace("LOOP", TBE_LOOPS[loop]).replace("GROUP", str(dim // 4))
            .replace("VEC", "uint2" if half else "float4").replace("ACC", F16_ACC if half else F32_ACC))


# The row loop three ways: FBGEMM's own CUDA loop (no pragma; its bound is the group size and
# the bag's end, so the compiler may unroll it), and forced to one or to four rows at a time.
TBE_LOOPS = {
    "fbgemm": "for (int j = 0; j < G && l + j < end; ++j)",
    "1": "int n = (int)min((long long)G, end - l);\n#pragma unroll 1\nfor (int j = 0; j < n; j++)",
    "4": "int n = (int)min((long long)G, end - l);\n#pragma unroll 4\nfor (int j = 0; j < n; j++)",
}


def tbe_like(loops=("fbgemm", "1", "4"), bag=80):
    """FBGEMM-shaped gathers (see TBE_SRC) of 128 B rows from an 8 GiB table, the row loop
    compiled each way of TBE_LOOPS: time per row at growing bag counts."""
    rows = (8 << 30) // 128
    table = cp.empty(rows * 32, dtype=cp.float32)
    kernels = {u: cp.RawKernel(tbe_source(u), "tbe") for u in loops}
    flush = cp.empty(512 << 20, dtype=cp.uint8)
    out = []
    for bags in (1, 32, 256, 1024, 4096, 16384):
        ids = cp.random.randint(0, rows, bags * bag, dtype=cp.int64)
        offs = cp.arange(0, bags * bag + 1, bag, dtype=cp.int64)
        res = cp.empty(bags * 32, dtype=cp.float32)
        for u, k in kernels.items():
            args = (table, ids, offs, np.int32(bags), res)
            grid = ((bags * 8 + 511) // 512,)
            k(grid, (512,), args)
            times = []
            for _ in range(ITERS):
                flush.fill(0)
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                k(grid, (512,), args)
                e.record()
                e.synchronize()
                times.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
            times.sort()
            med = times[len(times) // 2]
            out.append({"unroll": u, "bags": bags, "bag": bag, "median_us": med, "ns_per_row": med * 1e3 / bag,
                        "read_tb_per_s": bags * bag * 128 / med / 1e6})
            print("tbe-like", out[-1], flush=True)
    del table, flush
    return out


def pointer_chase(footprint, steps, seed=1):
    """Mean latency in ns of one thread following a random cycle over the 128 B lines of
    `footprint` bytes."""
    lines = footprint // 128
    per = 128 // 8
    order = np.random.default_rng(seed).permutation(lines).astype(np.uint64)
    nxt = np.zeros(lines * per, dtype=np.uint64)
    nxt[order * per] = np.roll(order, -1) * per
    g = cp.asarray(nxt)
    sink = cp.zeros(1, dtype=cp.uint64)
    start = int(order[0]) * per
    CHASE((1,), (1,), (g, np.uint64(start), np.int64(min(steps, 10_000)), sink))  # warm-up
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    CHASE((1,), (1,), (g, np.uint64(start), np.int64(steps), sink))
    e.record()
    e.synchronize()
    ns = cp.cuda.get_elapsed_time(s, e) * 1e6 / steps
    del g
    return ns


def streaming(gib=4):
    x = torch.empty(gib * 2**30 // 4, dtype=torch.float32, device=DEV)
    med, best = timed(lambda: x.sum(), cold=True)
    del x
    return {"bytes": gib * 2**30, "median_us": med, "tb_per_s": gib * 2**30 / med / 1e6}


def gather(row_bytes, table_bytes, n):
    """Random rows of `row_bytes` from a `table_bytes` table: bytes read per second."""
    dim = row_bytes // 4
    rows = table_bytes // row_bytes
    table = torch.empty((rows, dim), device=DEV)
    ids = torch.randint(0, rows, (n,), device=DEV)
    fn = lambda: F.embedding(ids, table)  # noqa: E731
    med, _ = timed(fn, cold=True)
    ks = kernels(fn)
    del table
    return {"row_bytes": row_bytes, "table_bytes": table_bytes, "rows": n, "median_us": med,
            "read_tb_per_s": n * row_bytes / med / 1e6, "kernels": ks}


def loaded_latency(bag=80, dim=32):
    """PyTorch's embedding bag (a warp walks a bag's rows one after another) over an 8 GiB
    table of 128 B rows, at growing bag counts: bandwidth against time per row."""
    rows = (8 << 30) // (dim * 4)
    table = torch.empty((rows, dim), device=DEV)
    out = []
    for bags in (1, 32, 256, 1024, 4096, 16384, 65536, 262144):
        ids = torch.randint(0, rows, (bags * bag,), device=DEV)
        offsets = torch.arange(0, bags * bag + 1, bag, device=DEV)
        fn = lambda: F.embedding_bag(ids, table, offsets, mode="sum", include_last_offset=True)  # noqa: E731
        med, best = timed(fn, cold=True)
        out.append({"bags": bags, "bag": bag, "median_us": med, "min_us": best, "ns_per_row": med * 1e3 / bag,
                    "read_tb_per_s": bags * bag * dim * 4 / med / 1e6})
        print("loaded latency", out[-1], flush=True)
    del table
    return out


def main():
    root, out_path = sys.argv[1], sys.argv[2]
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    p = torch.cuda.get_device_properties(0)
    result = {
        "device": p.name, "sms": p.multi_processor_count, "l2_bytes": getattr(p, "L2_cache_size", None),
        "torch": torch.__version__, "cuda": torch.version.cuda, "iters": ITERS,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "workloads": {}, "micro": {},
    }
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    for name, m in manifest.items():
        if only and name not in only:
            continue
        d = os.path.join(root, name)
        build = {"bag": bag_workload, "kg": kg_workload, "scatter": scatter_workload}[m["kind"]]
        try:
            call, info = build(d, m)
            cold, cold_min = timed(call, cold=True)
            warm, warm_min = timed(call, cold=False)
            ks = kernels(call)
            alt = getattr(call, "alt", None)
            extra = {}
            if alt is not None:
                a_cold, a_min = timed(alt[1], cold=True)
                extra = {"alt": alt[0], "alt_cold_us": a_cold, "alt_cold_min_us": a_min, "alt_kernels": kernels(alt[1])}
        except Exception as e:  # one workload's failure must not lose the others
            result["workloads"][name] = {"error": repr(e)}
            print(name, "failed:", repr(e), flush=True)
            continue
        finally:
            torch.cuda.empty_cache()
        del call
        r = dict(info, **extra, cold_us=cold, cold_min_us=cold_min, warm_us=warm, warm_min_us=warm_min, kernels=ks,
                 model_sim_us=m["model_sim_us"], model_analytic_us=m["model_analytic_us"])
        result["workloads"][name] = r
        print(f"{name:18} cold {cold:9.2f} us  warm {warm:9.2f} us  model {m['model_sim_us']:8.2f} us  "
              f"analytic {m['model_analytic_us']:7.2f} us  kernels {ks} {extra}", flush=True)
        torch.cuda.empty_cache()
    if not only or "micro" in only:
        try:
            micro_benchmarks(result["micro"])
        except Exception as e:
            result["micro"]["error"] = repr(e)
            print("micro failed:", repr(e), flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


def micro_benchmarks(micro):
    """Pointer chases, a streaming read, random gathers and a loaded-latency sweep, into `micro`."""
    micro["tbe_like"] = tbe_like()
    micro["random_rows"] = [random_rows(b) for b in (32, 64, 128, 256)]
    for r in micro["random_rows"]:
        print("random rows", r, flush=True)
    micro["loaded_latency"] = loaded_latency()
    micro["pointer_chase_ns"] = {}
    for label, fp, steps in [("256KiB", 2**18, 200_000), ("4MiB", 2**22, 200_000), ("8MiB", 2**23, 200_000),
                             ("16MiB", 2**24, 200_000), ("32MiB", 2**25, 200_000),
                             ("1GiB", 2**30, 100_000), ("4GiB", 2**32, 100_000)]:
        micro["pointer_chase_ns"][label] = pointer_chase(fp, steps)
        print("pointer chase", label, round(micro["pointer_chase_ns"][label], 1), "ns", flush=True)
    micro["streaming_read"] = streaming()
    print("streaming", micro["streaming_read"], flush=True)
    # Random rows of an 8 GiB table, and of a 16 MiB one (L2-resident once warm; timed cold).
    micro["gather"] = [gather(b, 8 << 30, 1 << 22) for b in (64, 128, 256)] + [gather(128, 16 << 20, 1 << 22)]
    for g in micro["gather"]:
        print("gather", g, flush=True)


if __name__ == "__main__":
    main()
