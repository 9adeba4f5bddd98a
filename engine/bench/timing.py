"""One configuration timed in a fresh subprocess: its own memory peak, no caches warmed by another.

``python -m engine.bench --worker SPEC`` runs ``measure`` and prints its result as one JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch

from ..devices import resolve_device
from .inputs import bench_inputs, bench_model
from .settings import BenchSettings


def measure(engine: str, precision: str, batch: int, s: BenchSettings, out_npy: Path) -> dict:
    """Runs in the fresh subprocess: build, warm up, time, save the output."""
    from ..runtimes import make_runtime

    if s.threads:
        torch.set_num_threads(s.threads)
    device = resolve_device(s.device)
    L = bench_inputs(s.size, batch)
    model = bench_model(s.weights, s.encoder)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        base_cuda = torch.cuda.memory_allocated(device)
    reset_peak_rss()
    rss_before = psutil.Process().memory_info().rss
    if engine == "optimized" and not s.cuda_graphs:
        from ..runtimes.optimized import OptimizedRuntime

        runtime: Any = OptimizedRuntime(model, device, precision, cuda_graphs=False)
    else:
        runtime = make_runtime(engine, model, device, precision)
    out = runtime.run(L)
    for _ in range(s.warmup - 1):
        out = runtime.run(L)
    times = []
    for _ in range(s.repeat):
        t = time.perf_counter()
        out = runtime.run(L)
        if cuda:
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t)
    if cuda:
        peak = (torch.cuda.max_memory_allocated(device) - base_cuda) / 2**20
    else:
        peak = max(0.0, (peak_rss_bytes() - rss_before) / 2**20)
    np.save(out_npy, out)
    med = statistics.median(times)
    result = {"ms_per_image": 1000 * med / batch, "images_per_s": batch / med, "peak_mem_mb": peak}
    if s.profile:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=acts) as prof:
            runtime.run(L)
        key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
        result["profile"] = prof.key_averages().table(sort_by=key, row_limit=12)
    return result


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark of this process (Linux): importing torch peaks higher
    than a small model's inference, and would hide it.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_in_subprocess(engine: str, precision: str, batch: int, s: BenchSettings, npy: Path) -> dict | str:
    """``measure`` in a fresh process (its own memory peak, no warm caches); its result, or why it failed."""
    cmd = [sys.executable, "-m", "engine.bench", "--worker",
           json.dumps({"engine": engine, "precision": precision, "batch": batch,
                       "settings": {**asdict(s), "json_path": None,
                                    "weights": str(s.weights) if s.weights else None},
                       "out": str(npy)})]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # the folder engine/ is in
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def worker_main(arg: str) -> None:
    spec = json.loads(arg)
    st = spec["settings"]
    st["batches"] = tuple(st["batches"])
    st["weights"] = Path(st["weights"]) if st["weights"] else None
    s = BenchSettings(**st)
    res = measure(spec["engine"], spec["precision"], spec["batch"], s, Path(spec["out"]))
    print(json.dumps(res))
