"""A/B of the optimized runtime with two sets of oneDNN primitives built once (engine/runtimes/dnnl.py).

Same weights and inputs, both runtimes built afresh each round, rounds taking turns (a busy spell on shared cores
hits both), the speed-up of B over A: its median over the rounds and its bootstrap interval. ``--a`` and ``--b``
alike give the harness's own noise (an A/A run). Usage: python tools/runtime_ab.py [--size 512] [--batch 1 8]
[--rounds 15] [--a KIND ...] [--b KIND ...], KIND one of engine.runtimes.fused.DIRECT_KINDS (none: PyTorch's calls).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.bench.hardware import cpu_info  # noqa: E402
from engine.bench.inputs import bench_inputs, bench_model  # noqa: E402
from engine.devices import cpu_has_fast_bf16  # noqa: E402
from engine.intervals import INTERVAL_LEVEL, paired_speedup  # noqa: E402
from engine.runtimes import OptimizedRuntime  # noqa: E402
from engine.runtimes.fused import DIRECT_KINDS  # noqa: E402


def runtime(model: torch.nn.Module, precision: str, kinds: list[str]) -> OptimizedRuntime:
    rt = OptimizedRuntime(model, torch.device("cpu"), precision)  # type: ignore[arg-type]
    rt.net.set_direct(kinds)
    return rt


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--a", nargs="*", default=[], choices=DIRECT_KINDS)
    ap.add_argument("--b", nargs="*", default=list(DIRECT_KINDS), choices=DIRECT_KINDS)
    a = ap.parse_args()
    print(cpu_info().line())
    print(f"A: {', '.join(a.a) or 'PyTorch calls'}; B: {', '.join(a.b) or 'PyTorch calls'}")
    model = bench_model(None)
    precisions = [p for p in a.precision if p == "fp32" or cpu_has_fast_bf16()]
    for precision in precisions:
        if set(runtime(model, precision, a.b).net.direct) != set(a.b):
            print("error: the direct oneDNN primitives are not available here", file=sys.stderr)
            return 1
        for batch in a.batch:
            L = bench_inputs(a.size, batch)
            times: dict[str, list[float]] = {"A": [], "B": []}
            diff = 0.0
            for r in range(a.rounds):
                # Both runtimes built afresh each round, in turns: where a runtime's buffers and weights land in
                # memory moved one of two identical runtimes by 2% against the other, round after round.
                kinds = [("A", a.a), ("B", a.b)] if r % 2 == 0 else [("B", a.b), ("A", a.a)]
                built = [(name, runtime(model, precision, k)) for name, k in kinds]
                outs = {name: [rt.run(L) for _ in range(2)][-1] for name, rt in built}  # warm-up
                diff = max(diff, float(np.abs(outs["A"] - outs["B"]).max()))
                for name, rt in built + built[::-1]:
                    t = time.perf_counter()
                    rt.run(L)
                    times[name].append((time.perf_counter() - t) * 1e3 / batch)
            ta = np.array(times["A"]).reshape(a.rounds, 2).min(axis=1)  # each round: the better of two calls
            tb = np.array(times["B"]).reshape(a.rounds, 2).min(axis=1)
            speedup, lo, hi = paired_speedup(ta, tb)
            print(f"{precision} batch {batch}: A {statistics.median(ta):.1f} ms/photo, B "
                  f"{statistics.median(tb):.1f}; speed-up {speedup:.3f} ({INTERVAL_LEVEL:.0%} "
                  f"interval {lo:.3f} to {hi:.3f}); max |ab| difference {diff:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
