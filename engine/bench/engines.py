"""``bench``: baseline and optimized side by side, each (engine, precision, batch) timed in its own subprocess."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..devices import describe_device, precision_support, resolve_device
from .hardware import conv_peak_gflops, cpu_info
from .inputs import model_gflops
from .report import Row, best_vs_best, format_table, headline_lines, ratio_lines
from .settings import BenchSettings
from .timing import measure_in_subprocess


def configurations(device: torch.device) -> tuple[list[tuple[str, str]], list[str]]:
    support = precision_support(device)
    configs = [("baseline", "fp32"), ("optimized", "fp32")]
    skipped = []
    for p in ("fp16", "bf16"):
        if support[p] is None:
            configs.append(("optimized", p))
        else:
            skipped.append(f"optimized {p}: {support[p]}")
    return configs, skipped


def run_engines_bench(s: BenchSettings) -> int:
    """Every (engine, precision) the device runs, at each batch size: the table, the ratios, optional JSON."""
    from ..runtimes.base import ab_difference

    device = resolve_device(s.device)
    threads = s.threads or torch.get_num_threads()
    configs, skipped = configurations(device)
    cpu = cpu_info()
    print(f"device: {describe_device(device)}, threads {threads}, size {s.size}x{s.size}, "
          f"median of {s.repeat} after {s.warmup} warm-up")
    print(cpu.line())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5 * (os.cpu_count() or 1):
        print(f"note: load average {load:.1f} (last minute) on {os.cpu_count()} CPUs: if other work still shares them,"
              " absolute times are slow and the ratios noisy; run again when the machine is quiet")
    for line in skipped:
        print(f"  not measured: {line}")
    gflops = model_gflops(s.size, s.weights)
    rows: list[Row] = []
    profiles: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batch in s.batches:
            ref: np.ndarray | None = None
            for engine, precision in configs:
                npy = Path(tmp) / f"{engine}-{precision}-{batch}.npy"
                res = measure_in_subprocess(engine, precision, batch, s, npy)
                if isinstance(res, str):
                    print(f"  {engine} {precision} batch {batch}: {res}")
                    continue
                out = np.load(npy)
                if engine == "baseline":
                    ref = out
                p999, diff = ab_difference(out, ref) if ref is not None else (float("nan"), float("nan"))
                rows.append(Row(engine, precision, batch, res["ms_per_image"], res["images_per_s"],
                                res["peak_mem_mb"], diff, p999))
                if "profile" in res:
                    profiles[f"{engine} {precision} batch {batch}"] = res["profile"]
                print(f"  measured {engine:9s} {precision:4s} batch {batch}: {res['ms_per_image']:.1f} ms/image",
                      flush=True)
    peak32 = conv_peak_gflops(device, torch.float32)
    print()
    print(format_table(rows, gflops, peak32))
    print(f"\nmodel: {gflops:.2f} GFLOPs per image at {s.size}x{s.size}; "
          f"3x3-conv peak measured now: {peak32:.0f} GFLOP/s fp32")
    print()
    for line in headline_lines(rows):
        print(line)
    for line in ratio_lines(rows):
        print(line)
    for name, table in profiles.items():
        print(f"\n== top operators by self time: {name}\n{table}")
    if s.json_path:
        doc = {"device": describe_device(device), "cpu": asdict(cpu), "load_average": load, "threads": threads,
               "size": s.size, "gflops_per_image": gflops, "conv_peak_gflops_fp32": peak32,
               "best_batch": best_vs_best(rows), "rows": [asdict(r) for r in rows]}
        Path(s.json_path).write_text(json.dumps(doc, indent=2))
    return 0 if rows else 1
