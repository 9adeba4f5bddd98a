"""``bench --peers``: ours beside the model exported to ONNX on ONNX Runtime and OpenVINO, in one process."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..devices import cpu_has_fast_bf16, describe_device, resolve_device
from ..intervals import INTERVAL_LEVEL, paired_speedup
from .hardware import cpu_info
from .inputs import bench_inputs, bench_model
from .settings import BenchSettings


@dataclass
class PeerRow:
    runtime: str  # "ours, optimized", "OpenVINO 2026.4", "--engine openvino" (the engine the app offers), ...
    precision: str
    batch: int
    ms_per_image: float  # median over the rounds, back to back (the second call after the pause)
    rounds_ms: list[float]
    max_abs_diff: float  # against our baseline at the same batch, Lab ab units
    p999_abs_diff: float
    idle_rounds_ms: list[float] = field(default_factory=list)  # the first call after the pause, each round

    @property
    def idle_ms_per_image(self) -> float | None:
        return statistics.median(self.idle_rounds_ms) if self.idle_rounds_ms else None

    @property
    def ours(self) -> bool:
        return self.runtime.startswith("ours")


ENGINE_ROW = "--engine openvino"  # our converted model on OpenVINO, as the app and `colorize` run it
# A pause before each runtime's turn: each runtime's threads spin for a while after its call (OpenMP's, TBB's, ONNX
# Runtime's), and on 2 cores the next runtime ran up to twice as slow beside them (docs/experiments, "its order").
# After it a runtime's own threads sleep too: its first call pays their waking (about 6 ms for PyTorch's OpenMP
# worker on a virtual machine), so each turn times two calls: the first "after a pause", the second back to back.
SETTLE_S = 0.25


def run_peers_bench(s: BenchSettings) -> int:
    """Our runtimes beside the model exported to ONNX on ONNX Runtime and OpenVINO: one process, the same
    inputs, every runtime once a round in turn (a busy spell on the shared cores hits them all alike), the
    median over the rounds, and each one's agreement with our baseline. Each round runs them in another order
    (shuffled, seeded): what a runtime leaves behind (cold caches, a trimmed heap, threads still spinning) falls on
    a different one each time; in a fixed order our fp32 always followed our baseline. Each turn starts after a
    pause (``SETTLE_S``), on cores no other runtime's threads still spin on, and times two calls: the first after
    the pause (a hint preview's latency after idle) and the second back to back (a batch's throughput, the verdicts).
    """
    import copy

    from ..peers import PEERS_EXTRA, export_onnx, missing_peers, onnxruntime_peer, openvino_peer
    from ..runtimes import make_runtime
    from ..runtimes.base import ab_difference
    from ..runtimes.openvino_runtime import OpenVINORuntime

    missing = missing_peers()
    if missing:
        print(f"error: bench --peers needs {', '.join(missing)}: {PEERS_EXTRA}", file=sys.stderr)
        return 1
    device = resolve_device("cpu")  # the peers run on the CPU: so do we, here
    threads = s.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    model = bench_model(s.weights)
    bf16 = cpu_has_fast_bf16()
    print(f"device: {describe_device(device)}, threads {threads} for every runtime, size {s.size}x{s.size}, "
          f"{s.rounds} rounds taking turns after {s.warmup} warm-up calls each, median ms per image")
    print(cpu_info().line())
    rows: list[PeerRow] = []
    precisions = [p for p in ("fp32", "bf16") if p == "fp32" or bf16]
    with tempfile.TemporaryDirectory() as tmp:
        onnx_file = export_onnx(copy.deepcopy(model), Path(tmp) / "colorizer.onnx", s.size)
        engines = [(p, OpenVINORuntime(model, device, p, cache=Path(tmp))) for p in precisions]  # any shape
        for batch in s.batches:
            L = bench_inputs(s.size, batch)
            runners: list[tuple[str, str, Any]] = [("ours, baseline", "fp32", make_runtime("baseline", model, device,
                                                                                            "fp32").run)]
            runners += [("ours, optimized", p, make_runtime("optimized", model, device, p).run) for p in precisions]
            peers = [onnxruntime_peer(onnx_file, threads)]
            peers += [openvino_peer(onnx_file, threads, p, L.shape) for p in precisions]
            runners += [(peer.name, peer.precision, peer.run) for peer in peers]
            runners += [(ENGINE_ROW, p, engine.run) for p, engine in engines]
            outputs = {}
            for name, precision, run in runners:
                for _ in range(max(1, s.warmup)):
                    outputs[(name, precision)] = run(L)
            times: dict[tuple[str, str], list[float]] = {(n, p): [] for n, p, _ in runners}
            idle: dict[tuple[str, str], list[float]] = {(n, p): [] for n, p, _ in runners}
            shuffle = np.random.default_rng(0)
            for _ in range(s.rounds):  # each round in its own order (seeded): none always follows the same one
                for k in shuffle.permutation(len(runners)):
                    name, precision, run = runners[k]
                    time.sleep(SETTLE_S)
                    for kept in (idle, times):  # first after the pause, then back to back
                        t = time.perf_counter()
                        run(L)
                        kept[(name, precision)].append(1000 * (time.perf_counter() - t) / batch)
            reference = outputs[("ours, baseline", "fp32")]
            for name, precision, _ in runners:
                p999, most = ab_difference(outputs[(name, precision)], reference)
                rows.append(PeerRow(name, precision, batch, statistics.median(times[(name, precision)]),
                                    times[(name, precision)], most, p999, idle[(name, precision)]))
            print(f"  measured batch {batch}", flush=True)
    print()
    for line in peer_table(rows):
        print(line)
    print()
    for line in peer_verdicts(rows):
        print(line)
    if s.json_path:
        doc = {"device": describe_device(device), "cpu": asdict(cpu_info()), "threads": threads, "size": s.size,
               "rounds": s.rounds, "rows": [asdict(r) for r in rows]}
        Path(s.json_path).write_text(json.dumps(doc, indent=2))
    return 0


def peer_table(rows: list[PeerRow]) -> list[str]:
    lines = ["| runtime | precision | batch | ms/image | x our fastest's time | ms/image after a pause | max abs diff "
             "| p99.9 abs diff |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        fastest = min(x.ms_per_image for x in rows if x.batch == r.batch and x.ours)
        after = "–" if r.idle_ms_per_image is None else f"{r.idle_ms_per_image:.1f}"
        lines.append(f"| {r.runtime} | {r.precision} | {r.batch} | {r.ms_per_image:.1f} | "
                     f"{r.ms_per_image / fastest:.2f} | {after} | {r.max_abs_diff:.3g} | {r.p999_abs_diff:.3g} |")
    return lines


def peer_verdicts(rows: list[PeerRow]) -> list[str]:
    """Ours against OpenVINO, as ratios of speed (> 1: ours is faster): fastest against fastest, fp32 against f32.

    OpenVINO's rows are both ways onto it: the ONNX export a deployment engineer would make, and our own conversion
    (``--engine openvino``, OpenVINO's converter on the module itself), whichever is faster; the two have differed
    by half at batch 1 on a 256 px input.
    """
    lines = []
    for batch in sorted({r.batch for r in rows}):
        at = [r for r in rows if r.batch == batch]
        ours = [r for r in at if r.ours and "baseline" not in r.runtime]
        vino = [r for r in at if r.runtime.startswith("OpenVINO") or r.runtime == ENGINE_ROW]
        if not ours or not vino:
            continue
        best, rival = min(ours, key=lambda r: r.ms_per_image), min(vino, key=lambda r: r.ms_per_image)
        lines.append(f"batch {batch}: our fastest ({best.precision}) is {rival.ms_per_image / best.ms_per_image:.2f}x "
                     f"the speed of OpenVINO's fastest ({rival.precision}, {route(rival)}){paired_ratio(best, rival)}")
        if best.idle_ms_per_image is not None and rival.idle_ms_per_image is not None:
            first = paired_ratio(replace(best, rounds_ms=best.idle_rounds_ms),
                                 replace(rival, rounds_ms=rival.idle_rounds_ms))
            lines.append(f"batch {batch}: after a {SETTLE_S:g} s pause (a first call, as a hint preview meets it): the "
                         f"same two {best.idle_ms_per_image:.1f} and {rival.idle_ms_per_image:.1f} ms, "
                         f"{rival.idle_ms_per_image / best.idle_ms_per_image:.2f}x{first}")
        engine = [r for r in at if r.runtime == ENGINE_ROW]
        if engine:
            fast = min(engine, key=lambda r: r.ms_per_image)
            lines.append(f"batch {batch}: {ENGINE_ROW} ({fast.precision}) is "
                         f"{best.ms_per_image / fast.ms_per_image:.2f}x the speed of our fastest"
                         f"{paired_ratio(fast, best)}")
        ours32 = next((r for r in ours if r.precision == "fp32"), None)
        vino32 = min((r for r in vino if r.precision == "fp32"), key=lambda r: r.ms_per_image, default=None)
        if ours32 is not None and vino32 is not None:
            lines.append(f"batch {batch}: our fp32 is {vino32.ms_per_image / ours32.ms_per_image:.2f}x the speed of "
                         f"OpenVINO's f32 ({route(vino32)}){paired_ratio(ours32, vino32)}")
    return lines


def route(row: PeerRow) -> str:
    """How an OpenVINO row reached OpenVINO."""
    return "as --engine openvino" if row.runtime == ENGINE_ROW else "via ONNX"


def paired_ratio(ours: PeerRow, rival: PeerRow, level: float = INTERVAL_LEVEL) -> str:
    """The speed ratio round by round (both ran in the same round, so a slow spell of the machine slows both):
    its median and a bootstrap interval over the rounds, as a suffix for a verdict line ("" with too few rounds).

    On a shared machine the medians of the two rows can move 20% between runs; the paired figure moves less.
    """
    if len(ours.rounds_ms) < 5 or len(ours.rounds_ms) != len(rival.rounds_ms):
        return ""
    median, lo, hi = paired_speedup(np.array(rival.rounds_ms), np.array(ours.rounds_ms), level)
    return f"; paired by round {median:.2f}x ({level:.0%} interval {lo:.2f}-{hi:.2f})"
