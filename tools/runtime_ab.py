"""A/B of the optimized runtime with two sets of oneDNN primitives built once (engine/runtimes/dnnl.py).

Same weights and inputs, rounds taking turns (a busy spell on shared cores hits both), the speed-up of B over A: its
median over the rounds and its bootstrap interval. Usage: python tools/runtime_ab.py [--size 512] [--batch 1 8]
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
from engine.intervals import INTERVAL_LEVEL, bootstrap_interval  # noqa: E402
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
    torch.set_num_threads(torch.get_num_threads())
    print(cpu_info().line())
    print(f"A: {', '.join(a.a) or 'PyTorch calls'}; B: {', '.join(a.b) or 'PyTorch calls'}")
    model = bench_model(None)
    precisions = [p for p in a.precision if p == "fp32" or cpu_has_fast_bf16()]
    for precision in precisions:
        off, on = runtime(model, precision, a.a), runtime(model, precision, a.b)
        if set(on.net.direct) != set(a.b):
            print("error: the direct oneDNN primitives are not available here", file=sys.stderr)
            return 1
        for batch in a.batch:
            L = bench_inputs(a.size, batch)
            diff = float(np.abs(off.run(L) - on.run(L)).max())
            for _ in range(2):
                off.run(L), on.run(L)
            times: dict[str, list[float]] = {"off": [], "on": []}
            for r in range(a.rounds):
                order = [("off", off), ("on", on)] if r % 2 == 0 else [("on", on), ("off", off)]
                for name, rt in order:
                    t = time.perf_counter()
                    rt.run(L)
                    times[name].append((time.perf_counter() - t) * 1e3 / batch)
            ratios = np.array(times["off"]) / np.array(times["on"])
            lo, hi = bootstrap_interval(lambda i, r=ratios: float(np.median(r[i])), len(ratios))
            print(f"{precision} batch {batch}: A {statistics.median(times['off']):.1f} ms/photo, B "
                  f"{statistics.median(times['on']):.1f}; speed-up {np.median(ratios):.3f} ({INTERVAL_LEVEL:.0%} "
                  f"interval {lo:.3f} to {hi:.3f}); max |ab| difference {diff:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
