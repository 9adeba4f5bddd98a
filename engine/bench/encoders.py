"""``bench --encoders``: the optimized runtime with each encoder, taking turns, side by side."""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from ..devices import describe_device, resolve_device
from .hardware import cpu_info
from .inputs import model_gflops
from .settings import BenchSettings
from .timing import measure_in_subprocess

ENCODER_ROUNDS = 3  # the encoders take turns this many times, so a busy spell hits both alike


def run_encoders_bench(s: BenchSettings) -> int:
    """The optimized runtime (its auto precision) with each encoder, side by side: ms per photo and the ratio.

    Random weights of each architecture (the shipped model's bins): the time does not depend on the values.
    """
    from ..devices import best_precision

    device = resolve_device(s.device)
    precision = best_precision(device)
    print(f"device: {describe_device(device)}, optimized {precision}, size {s.size}x{s.size}, "
          f"median of {s.repeat} after {s.warmup} warm-up, {ENCODER_ROUNDS} rounds taking turns")
    print(cpu_info().line())
    times: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(ENCODER_ROUNDS):
            for batch in s.batches:
                for enc in s.encoders:
                    res = measure_in_subprocess("optimized", precision, batch, replace(s, encoder=enc),
                                                Path(tmp) / f"{enc}-{batch}.npy")
                    if isinstance(res, str):
                        print(f"  {enc} batch {batch}: {res}")
                        return 1
                    times.setdefault((enc, batch), []).append(res["ms_per_image"])
    first = s.encoders[0]
    rows: list[dict] = []
    print(f"\n| encoder | GFLOPs/photo | batch | ms/photo (median of rounds) | x {first}'s time |")
    print("|---|---:|---:|---:|---:|")
    for enc in s.encoders:
        gflops = model_gflops(s.size, s.weights, enc)
        for batch in s.batches:
            ms = statistics.median(times[(enc, batch)])
            ratio = ms / statistics.median(times[(first, batch)])
            print(f"| {enc} | {gflops:.2f} | {batch} | {ms:.1f} | {ratio:.2f} |")
            rows.append({"encoder": enc, "gflops": gflops, "batch": batch, "ms_per_image": ms,
                         "rounds_ms": times[(enc, batch)], "time_ratio": ratio})
    if s.json_path:
        doc = {"device": describe_device(device), "precision": precision, "size": s.size, "rows": rows}
        Path(s.json_path).write_text(json.dumps(doc, indent=2))
    return 0
