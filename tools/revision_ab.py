"""A/B of the optimized runtime at two revisions of this repository: whether a change to the engine is faster.

Each revision runs in its own worker process on its own copy of the source (``git worktree``; ``.`` is the working
tree as it is), on the same weights and inputs. Rounds take turns: a busy spell on shared cores hits both. Each round
both workers build their runtime afresh (where a runtime's buffers land in memory moved two identical runtimes by 2%,
docs/experiments), warm it up, and time two calls, the better counting, each after a pause that lets the other
process's spinning threads go idle. Prints the speed-up of B over A: its median over the rounds and its bootstrap
interval, and the largest difference between their outputs.

Usage: python tools/revision_ab.py --a HEAD --b . [--size 512] [--batch 1 8] [--precision fp32 bf16] [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.intervals import INTERVAL_LEVEL, paired_speedup  # noqa: E402

PAUSE_S = 0.25  # before each timed call: the other process's OpenMP threads spin for a while after its call

# The worker: reads one JSON command a line, answers one JSON line. Only APIs every revision has (bench inputs and
# model, OptimizedRuntime) are used.
WORKER = r"""
import json, sys, time
import numpy as np, torch
from engine.bench.inputs import bench_inputs, bench_model
from engine.runtimes import OptimizedRuntime
model = bench_model(None)
rt = L = None
inputs = {}
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["do"] == "build":
        rt = None
        rt = OptimizedRuntime(model, torch.device("cpu"), cmd["precision"])
        shape = (cmd["size"], cmd["batch"])
        if shape not in inputs:  # the same inputs every round: decoded once
            inputs[shape] = bench_inputs(*shape)
        L = inputs[shape]
        for _ in range(2):
            out = rt.run(L)
        np.save(cmd["out"], out)
        answer = {}
    elif cmd["do"] == "time":
        time.sleep(cmd["pause"])
        t = time.perf_counter()
        rt.run(L)
        answer = {"ms": (time.perf_counter() - t) * 1e3}
    print(json.dumps(answer), flush=True)
"""


class Worker:
    def __init__(self, tree: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], cwd=tree, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, **cmd: object) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("a worker ended (its error is above)")
        return json.loads(line)  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def checkout(rev: str, scratch: Path, name: str) -> Path:
    """The source at ``rev`` (``.``: the working tree itself), in a detached worktree ``scratch/name``."""
    if rev == ".":
        return ROOT
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    tree = scratch / name
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True, capture_output=True)
    resources = tree / "resources"  # the weights are the working tree's: the same model on both sides
    shutil.rmtree(resources)
    resources.symlink_to(ROOT / "resources")
    return tree


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", default="HEAD")
    ap.add_argument("--b", default=".")
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"])
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a kill still removes the worktrees (``finally``)
    from engine.bench.hardware import cpu_info
    from engine.devices import cpu_has_fast_bf16

    print(cpu_info().line())
    print(f"A: {a.a}; B: {a.b}")
    precisions = [p for p in a.precision if p == "fp32" or cpu_has_fast_bf16()]
    with tempfile.TemporaryDirectory(prefix="colorizer-ab-") as tmp:
        scratch = Path(tmp)
        trees = {"A": checkout(a.a, scratch, "tree-a"), "B": checkout(a.b, scratch, "tree-b")}
        workers = {name: Worker(tree) for name, tree in trees.items()}
        try:
            for precision in precisions:
                for batch in a.batch:
                    times: dict[str, list[float]] = {"A": [], "B": []}
                    diff = 0.0
                    for r in range(a.rounds):
                        order = ["A", "B"] if r % 2 == 0 else ["B", "A"]
                        for name in order:
                            workers[name].ask(do="build", precision=precision, size=a.size, batch=batch,
                                              out=str(scratch / f"{name}.npy"))
                        diff = max(diff, float(np.abs(np.load(scratch / "A.npy") - np.load(scratch / "B.npy")).max()))
                        for name in order + order[::-1]:
                            times[name].append(workers[name].ask(do="time", pause=PAUSE_S)["ms"] / batch)
                    ta = np.array(times["A"]).reshape(a.rounds, 2).min(axis=1)  # each round: the better of two
                    tb = np.array(times["B"]).reshape(a.rounds, 2).min(axis=1)
                    speedup, lo, hi = paired_speedup(ta, tb)
                    print(f"{precision} batch {batch}: A {statistics.median(ta):.1f} ms/photo, B "
                          f"{statistics.median(tb):.1f}; speed-up {speedup:.3f} ({INTERVAL_LEVEL:.0%} "
                          f"interval {lo:.3f} to {hi:.3f}); max |ab| difference {diff:.3g}", flush=True)
        finally:
            for w in workers.values():
                w.close()
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
