#!/usr/bin/env python3
"""Times a real GPU on the dense layers of dae-sim's end-to-end DLRM workloads (PyTorch).

Usage: h100_dense.py OUT.json

The MLPs are those `configs/h100-vs-dae.toml` runs end to end (the workloads' `[[dense]]`
tables, at the experiment's batches), in BF16 as the H100 preset's `[dense]` assumes: Linear
layers with ReLU between them, a sigmoid after the top MLP's last. Each is timed on the GPU with
CUDA events, as the median of ITERS calls, three ways:

- eager: PyTorch's forward as a user calls it, one kernel (or two) per layer;
- graph: the same forward captured once as a CUDA graph and replayed (one launch, the kernels
  back to back);
- fused: closer to a tuned inference stack, each layer one GEMM with its bias and ReLU fused in
  its epilogue (`torch._addmm_activation`; the top MLP's last layer a GEMM and a sigmoid, three
  kernels), the input padded to a multiple of 8 wide, captured as a CUDA graph;
- and each Linear layer alone (with its ReLU; and fused), to give the floor of one small GEMM;
- and a graph of one trivial kernel, the fixed cost a graph's figure includes.

Timing is h100_measure.py's (beside this script; it needs CuPy): the GPU is kept busy while a
call is queued (a spin, or the flush), so a figure is the GPU's time and not the host's launch
latency. Warm: the weights as the previous call left them in the 50 MB L2; cold: a 512 MiB
write first evicts them, as the simulator's roofline streams them from HBM.
"""

import json
import sys

import torch

from h100_measure import DEV
from h100_measure import timed as measure

ITERS = 50

# (workload, batch in configs/h100-vs-dae.toml, bottom MLP sizes, top MLP sizes): the workloads'
# [[dense]] tables in configs/workloads/.
CASES = [
    ("dlrm-rm1", 128, [13, 512, 256, 32], [68, 1024, 1024, 512, 256, 1]),
    ("dlrm-rm2", 128, [13, 512, 256, 64], [592, 1024, 1024, 512, 256, 1]),
    ("dlrm-rm3", 512, [13, 512, 256, 32], [87, 1024, 1024, 512, 256, 1]),
]


def mlp(sizes, top):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        last = i == len(sizes) - 2
        layers.append(torch.nn.Sigmoid() if (last and top) else torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(DEV, torch.bfloat16).eval()


def timed(fn, cold):
    """Median and minimum of ITERS calls of `fn` (h100_measure.py's timing), in microseconds."""
    median, best = measure(fn, cold, ITERS)
    return {"median_us": median, "min_us": best}


class Fused(torch.nn.Module):
    """`model`'s layers as GEMMs with the bias and ReLU in the GEMM's epilogue, the input width
    padded with zeros to a multiple of 8 (16 B of BF16), as inference stacks pad it: an odd
    width (13, 87) sends cuBLAS to slower unaligned kernels."""

    def __init__(self, model):
        super().__init__()
        linears = [m for m in model if isinstance(m, torch.nn.Linear)]
        self.sigmoid = isinstance(model[-1], torch.nn.Sigmoid)
        w = linears[0].weight
        self.width = -(-w.shape[1] // 8) * 8
        first = torch.zeros(w.shape[0], self.width, device=w.device, dtype=w.dtype)
        first[:, : w.shape[1]] = w
        self.weights = [first] + [m.weight for m in linears[1:]]
        self.biases = [m.bias for m in linears]

    def pad(self, x):
        """`x` widened to the padded input width."""
        p = torch.zeros(x.shape[0], self.width, device=x.device, dtype=x.dtype)
        p[:, : x.shape[1]] = x
        return p

    def forward(self, x):
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if i == len(self.weights) - 1 and self.sigmoid:
                x = torch.sigmoid(torch.addmm(b, x, w.t()))
            else:
                x = torch._addmm_activation(b, x, w.t(), use_gelu=False)
        return x


def fused_graph(model, x):
    """`model` run as [`Fused`] on `x`, captured as a CUDA graph: returns a replay function."""
    f = Fused(model)
    return graphed(f, f.pad(x))


def graphed(model, x):
    """`model(x)` captured as a CUDA graph: returns a replay function."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        model(x)
    return g.replay


def main():
    out = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "iters": ITERS,
        "mlps": [],
    }
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    # The fixed cost of a graph as measured here: one trivial kernel, replayed the same way.
    tiny = torch.zeros(1, device=DEV)
    start = graphed(lambda t: t.add_(1), tiny)
    out["graph_of_one_tiny_kernel"] = {"warm": timed(start, False), "cold": timed(start, True)}
    print("graph of one tiny kernel", out["graph_of_one_tiny_kernel"], flush=True)
    for name, batch, bottom, top in CASES:
        for part, sizes, is_top in (("bottom_mlp", bottom, False), ("top_mlp", top, True)):
            model = mlp(sizes, is_top)
            x = torch.randn(batch, sizes[0], device=DEV, dtype=torch.bfloat16)
            entry = {"workload": name, "mlp": part, "batch": batch, "sizes": sizes}
            with torch.no_grad():
                entry["eager_warm"] = timed(lambda: model(x), False)
                entry["eager_cold"] = timed(lambda: model(x), True)
                replay = graphed(model, x)
                entry["graph_warm"] = timed(replay, False)
                entry["graph_cold"] = timed(replay, True)
                fused = fused_graph(model, x)
                entry["fused_warm"] = timed(fused, False)
                entry["fused_cold"] = timed(fused, True)
                layers = []
                for i in range(len(sizes) - 1):
                    one = torch.nn.Sequential(model[2 * i], model[2 * i + 1])
                    xi = torch.randn(batch, sizes[i], device=DEV, dtype=torch.bfloat16)
                    layers.append(
                        {
                            "shape": [batch, sizes[i], sizes[i + 1]],
                            "warm": timed(lambda: one(xi), False),
                            "cold": timed(lambda: one(xi), True),
                            "fused_warm": timed(fused_graph(one, xi), False),
                        }
                    )
                entry["layers"] = layers
            print(
                f"{name} {part} batch {batch}: eager {entry['eager_warm']['median_us']:.1f} us warm, "
                f"{entry['eager_cold']['median_us']:.1f} cold; graph {entry['graph_warm']['median_us']:.1f} warm, "
                f"{entry['graph_cold']['median_us']:.1f} cold; fused graph {entry['fused_warm']['median_us']:.1f} warm, "
                f"{entry['fused_cold']['median_us']:.1f} cold; layers warm "
                + ", ".join(f"{l['warm']['median_us']:.1f}" for l in layers)
                + "; fused "
                + ", ".join(f"{l['fused_warm']['median_us']:.1f}" for l in layers),
                flush=True,
            )
            out["mlps"].append(entry)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
