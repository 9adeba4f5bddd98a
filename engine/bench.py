"""``python main.py bench``: baseline and optimized side by side, in one run, on the same inputs.

Each (engine, precision, batch) is timed in a fresh subprocess, so that its peak memory is
its own (CUDA's max_memory_allocated, or the growth of the process's peak RSS on the CPU).
The headline compares each engine at its own best batch size: at one shared batch size the
ratio flatters whichever engine that size suits.

``bench --hints`` measures instead what a user waits for after placing a colour hint: hint map,
model (batch 1) and preview, with and without hints (``run_hints_bench``).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psutil
import torch

from .devices import cpu_has_fast_bf16, describe_device, precision_support, resolve_device

if TYPE_CHECKING:
    from .colorizer import Colorizer


@dataclass(frozen=True)
class BenchSettings:
    size: int = 512
    batches: tuple[int, ...] = (1, 8)
    json_path: Path | None = None
    profile: bool = False
    repeat: int = 5
    warmup: int = 2
    device: str = "auto"
    weights: Path | None = None
    threads: int | None = None
    hints: bool = False  # measure hints -> preview instead (run_hints_bench)
    preview: int = 800  # the app's previews: longer side at screen resolution, not the photo's
    hint_photo: int = 3000  # longer side of the photo hinted (a typical scan)
    hint_points: int = 5
    encoders: tuple[str, ...] = ()  # compare these encoders instead (run_encoders_bench)
    encoder: str | None = None  # a worker's: time a random model with this encoder, not the weights
    peers: bool = False  # ours beside ONNX Runtime and OpenVINO, in one process (run_peers_bench)
    cuda_graphs: bool = True  # the optimized runtime's CUDA graphs (off: every call launched anew)
    rounds: int = 9  # --peers: every runtime once a round, taking turns


@dataclass
class Row:
    engine: str
    precision: str
    batch: int
    ms_per_image: float
    images_per_s: float
    peak_mem_mb: float
    max_abs_diff: float  # |ab| against the baseline at the same batch, Lab units
    p999_abs_diff: float  # its 99.9th percentile: the robust figure (see engine.options.AGREEMENT)


@dataclass(frozen=True)
class CpuInfo:
    """What the CPU offers the convolutions: results differ between CPU kinds, so every bench says which."""

    model: str
    capability: str  # torch.backends.cpu.get_cpu_capability(): the widest vector ISA ATen uses (AVX2, AVX512...)
    amx: bool  # AMX tiles (Sapphire Rapids and later): oneDNN's bf16 matrix units; ATen still reports AVX512
    avx512_bf16: bool
    bf16_native: bool  # engine.devices.cpu_has_fast_bf16: what "auto" precision goes by

    def line(self) -> str:
        extras = [name for name, on in (("AMX", self.amx), ("AVX512-BF16", self.avx512_bf16)) if on]
        isa = self.capability + (f" + {' + '.join(extras)}" if extras else "")
        return f"cpu: {self.model}; {isa}; bf16 {'native' if self.bf16_native else 'emulated (not offered)'}"


def cpu_info() -> CpuInfo:
    flags: set[str] = set()
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags" and not flags:
                    flags = set(value.split())
                elif key.strip() == "model name" and value.strip():
                    model = value.strip()
    except OSError:  # not Linux: the flags are unknown, torch's own figures remain
        pass
    return CpuInfo(model, torch.backends.cpu.get_cpu_capability(), "amx_tile" in flags, "avx512_bf16" in flags,
                   cpu_has_fast_bf16())


def bench_inputs(size: int, batch: int) -> np.ndarray:
    """The same L batch for every configuration: centre crops of the sample photos, else noise."""
    import cv2

    from .color import lightness
    from .imageio import decode
    from .weights import RESOURCES

    photos = sorted((RESOURCES / "samples").glob("*.jpg")) + sorted((RESOURCES / "samples").glob("*.png"))
    L = np.empty((batch, 1, size, size), np.float32)
    for i in range(batch):
        if photos:
            img = decode(photos[i % len(photos)]).pixels
            h, w = img.shape[:2]
            s = min(h, w)
            img = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
        else:
            img = (np.random.default_rng(i).random((size, size)) * 255).astype(np.uint8)
        L[i, 0] = cv2.resize(lightness(np.ascontiguousarray(img)), (size, size), interpolation=cv2.INTER_AREA)
    return L


def _load_model(weights: Path | None, encoder: str | None = None):
    from .model import CVUNet, ModelConfig
    from .weights import DEFAULT_WEIGHTS, load_model, read_weights

    path = weights or DEFAULT_WEIGHTS
    if encoder is not None:  # an encoder comparison: the time does not depend on the weights' values
        torch.manual_seed(0)
        bins = int(read_weights(Path(path))["config"]["num_bins"]) if Path(path).exists() else 98  # no model built
        return CVUNet(ModelConfig(num_bins=bins, encoder=encoder)).eval()
    if Path(path).exists():
        return load_model(path)
    torch.manual_seed(0)  # no trained weights yet: timing does not depend on them
    return CVUNet(ModelConfig(num_bins=98)).eval()


def measure(engine: str, precision: str, batch: int, s: BenchSettings, out_npy: Path) -> dict:
    """Runs in the fresh subprocess: build, warm up, time, save the output."""
    from .runtimes import make_runtime

    if s.threads:
        torch.set_num_threads(s.threads)
    device = resolve_device(s.device)
    L = bench_inputs(s.size, batch)
    model = _load_model(s.weights, s.encoder)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        base_cuda = torch.cuda.memory_allocated(device)
    reset_peak_rss()
    rss_before = psutil.Process().memory_info().rss
    if engine == "optimized" and not s.cuda_graphs:
        from .runtimes.optimized import OptimizedRuntime

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


def conv_peak_gflops(device: torch.device, dtype: torch.dtype) -> float:
    """A 3x3 convolution, 64 channels, 256 px, channels_last: what this hardware gives."""
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).to(device=device, dtype=dtype)
    conv = conv.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    x = torch.randn(4, 64, 256, 256, device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
    flops = 2 * 64 * 64 * 9 * 256 * 256 * 4
    with torch.inference_mode():
        for _ in range(2):
            conv(x)
        times = []
        for _ in range(5):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t = time.perf_counter()
            conv(x)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t)
    return flops / statistics.median(times) / 1e9


def model_gflops(size: int, weights: Path | None, encoder: str | None = None) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    model = _load_model(weights, encoder)
    with FlopCounterMode(display=False) as fc, torch.inference_mode():
        model(torch.zeros(1, 1, size, size))
    return fc.get_total_flops() / 1e9


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


def run_bench(s: BenchSettings) -> int:
    from .runtimes.base import ab_difference

    if s.hints:
        return run_hints_bench(s)
    if s.encoders:
        return run_encoders_bench(s)
    if s.peers:
        return run_peers_bench(s)

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


def measure_in_subprocess(engine: str, precision: str, batch: int, s: BenchSettings, npy: Path) -> dict | str:
    """``measure`` in a fresh process (its own memory peak, no warm caches); its result, or why it failed."""
    cmd = [sys.executable, "-m", "engine.bench", "--worker",
           json.dumps({"engine": engine, "precision": precision, "batch": batch,
                       "settings": {**asdict(s), "json_path": None,
                                    "weights": str(s.weights) if s.weights else None},
                       "out": str(npy)})]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


ENCODER_ROUNDS = 3  # the encoders take turns this many times, so a busy spell hits both alike


def run_encoders_bench(s: BenchSettings) -> int:
    """The optimized runtime (its auto precision) with each encoder, side by side: ms per photo and the ratio.

    Random weights of each architecture (the shipped model's bins): the time does not depend on the values.
    """
    from .devices import best_precision

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


@dataclass
class PeerRow:
    runtime: str  # "ours, optimized", "OpenVINO 2026.4", ...
    precision: str
    batch: int
    ms_per_image: float  # median over the rounds
    rounds_ms: list[float]
    max_abs_diff: float  # against our baseline at the same batch, Lab ab units
    p999_abs_diff: float

    @property
    def ours(self) -> bool:
        return self.runtime.startswith("ours")


def run_peers_bench(s: BenchSettings) -> int:
    """Our runtimes beside the model exported to ONNX on ONNX Runtime and OpenVINO: one process, the same
    inputs, every runtime once a round in turn (a busy spell on the shared cores hits them all alike), the
    median over the rounds, and each one's agreement with our baseline.
    """
    import copy

    from .peers import PEERS_EXTRA, export_onnx, missing_peers, onnxruntime_peer, openvino_peer
    from .runtimes import make_runtime
    from .runtimes.base import ab_difference

    missing = missing_peers()
    if missing:
        print(f"error: bench --peers needs {', '.join(missing)}: {PEERS_EXTRA}", file=sys.stderr)
        return 1
    device = resolve_device("cpu")  # the peers run on the CPU: so do we, here
    threads = s.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    model = _load_model(s.weights)
    bf16 = cpu_has_fast_bf16()
    print(f"device: {describe_device(device)}, threads {threads} for every runtime, size {s.size}x{s.size}, "
          f"{s.rounds} rounds taking turns after {s.warmup} warm-up calls each, median ms per image")
    print(cpu_info().line())
    rows: list[PeerRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        onnx_file = export_onnx(copy.deepcopy(model), Path(tmp) / "colorizer.onnx", s.size)
        for batch in s.batches:
            L = bench_inputs(s.size, batch)
            runners: list[tuple[str, str, Any]] = [("ours, baseline", "fp32", make_runtime("baseline", model, device,
                                                                                            "fp32").run)]
            runners += [("ours, optimized", p, make_runtime("optimized", model, device, p).run)
                        for p in ("fp32", "bf16") if p == "fp32" or bf16]
            peers = [onnxruntime_peer(onnx_file, threads)]
            peers += [openvino_peer(onnx_file, threads, p, L.shape) for p in ("fp32", "bf16") if p == "fp32" or bf16]
            runners += [(peer.name, peer.precision, peer.run) for peer in peers]
            outputs = {}
            for name, precision, run in runners:
                for _ in range(max(1, s.warmup)):
                    outputs[(name, precision)] = run(L)
            times: dict[tuple[str, str], list[float]] = {(n, p): [] for n, p, _ in runners}
            for _ in range(s.rounds):
                for name, precision, run in runners:
                    t = time.perf_counter()
                    run(L)
                    times[(name, precision)].append(1000 * (time.perf_counter() - t) / batch)
            reference = outputs[("ours, baseline", "fp32")]
            for name, precision, _ in runners:
                p999, most = ab_difference(outputs[(name, precision)], reference)
                rows.append(PeerRow(name, precision, batch, statistics.median(times[(name, precision)]),
                                    times[(name, precision)], most, p999))
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
    lines = ["| runtime | precision | batch | ms/image | x our fastest's time | max abs diff | p99.9 abs diff |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        fastest = min(x.ms_per_image for x in rows if x.batch == r.batch and x.ours)
        lines.append(f"| {r.runtime} | {r.precision} | {r.batch} | {r.ms_per_image:.1f} | "
                     f"{r.ms_per_image / fastest:.2f} | {r.max_abs_diff:.3g} | {r.p999_abs_diff:.3g} |")
    return lines


def peer_verdicts(rows: list[PeerRow]) -> list[str]:
    """Ours against OpenVINO, as ratios of speed (> 1: ours is faster): fastest against fastest, fp32 against f32."""
    lines = []
    for batch in sorted({r.batch for r in rows}):
        at = [r for r in rows if r.batch == batch]
        ours = [r for r in at if r.ours and "baseline" not in r.runtime]
        vino = [r for r in at if r.runtime.startswith("OpenVINO")]
        if not ours or not vino:
            continue
        best, rival = min(ours, key=lambda r: r.ms_per_image), min(vino, key=lambda r: r.ms_per_image)
        lines.append(f"batch {batch}: our fastest ({best.precision}) is {rival.ms_per_image / best.ms_per_image:.2f}x "
                     f"the speed of OpenVINO's fastest ({rival.precision})")
        ours32 = next((r for r in ours if r.precision == "fp32"), None)
        vino32 = next((r for r in vino if r.precision == "fp32"), None)
        if ours32 is not None and vino32 is not None:
            lines.append(f"batch {batch}: our fp32 is {vino32.ms_per_image / ours32.ms_per_image:.2f}x the speed of "
                         "OpenVINO's f32")
    return lines


def hint_photo(side: int) -> np.ndarray:
    """The photo hinted: the first sample photo (else smooth noise), resized to longer side ``side``, RGB uint8."""
    import cv2

    from .imageio import decode
    from .weights import RESOURCES

    photos = sorted((RESOURCES / "samples").glob("*.jpg"))
    if photos:
        img = decode(photos[0]).pixels
        img = img if img.ndim == 3 else np.repeat(img[..., None], 3, axis=2)
    else:
        img = (np.random.default_rng(0).random((48, 64, 3)) * 255).astype(np.uint8)
    h, w = img.shape[:2]
    s = side / max(h, w)
    return cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_CUBIC)


def hinted_colorizer(s: BenchSettings) -> tuple[Colorizer, bool]:
    """A colorizer at batch 1 whose model reads hints, and whether it is a random-weights stand-in.

    Weights that take no hints (the shipped ones) are replaced by a random-weights hinted model of the
    same config: the timing depends on the shapes, not on trained values.
    """
    from .colorizer import Colorizer
    from .hints import HINT_CHANNELS
    from .model import CVUNet, ModelConfig
    from .options import ColorizeSettings

    model = _load_model(s.weights)
    stand_in = model.config.hint_channels == 0
    if stand_in:
        torch.manual_seed(0)
        model = CVUNet(ModelConfig.from_dict({**model.config.to_dict(), "hint_channels": HINT_CHANNELS}),
                       model.readout).eval()
    settings = ColorizeSettings(device=s.device, size=s.size, batch_size=1)
    return Colorizer.create(settings, model=model), stand_in


def preview_rgb(L: np.ndarray, source: np.ndarray, size: int) -> np.ndarray:
    """The colour preview the app shows (longer side at most ``size``) from full-size L and ``ab_source``'s output."""
    import cv2

    from .color import join_lab, to_uint8

    h, w = L.shape
    s = min(1.0, size / max(h, w))
    dsize = (max(1, round(w * s)), max(1, round(h * s)))
    small_L = cv2.resize(L, dsize, interpolation=cv2.INTER_AREA) if s < 1 else L
    ab = cv2.resize(source, dsize, interpolation=cv2.INTER_LINEAR).reshape(dsize[1], dsize[0], 2)
    return to_uint8(join_lab(small_L, ab))


def run_hints_bench(s: BenchSettings) -> int:
    """Milliseconds from hints to preview: hint map at the working size, the model at batch 1, the preview-size colour
    image; median of ``s.repeat`` rounds, with and without hints, alternating. The photo is decoded and
    prepared once beforehand (the app holds it while the user places hints).
    """
    from .colorizer import ab_source, pack, pack_hints, prepare
    from .hints import simulate_hints

    if s.threads:
        torch.set_num_threads(s.threads)
    colorizer, stand_in = hinted_colorizer(s)
    photo = hint_photo(s.hint_photo)
    item = prepare(photo, s.size)
    hints = simulate_hints(photo, s.hint_points, seed=0)

    def once(with_hints: bool) -> tuple[float, float]:
        t = time.perf_counter()
        maps = pack_hints([item], [hints]) if with_hints else None
        t_map = time.perf_counter()
        ab = colorizer.spread(colorizer.infer(pack([item]), maps)[0], item, hints if with_hints else ())
        preview_rgb(item.L, ab_source(ab, item), s.preview)
        return time.perf_counter() - t, t_map - t

    for _ in range(s.warmup):
        once(True)
        once(False)
    with_t, map_t, without_t = [], [], []
    for _ in range(s.repeat):
        total, hint_map_s = once(True)
        with_t.append(total)
        map_t.append(hint_map_s)
        without_t.append(once(False)[0])
    h, w = item.small.shape
    H, W = item.shape
    doc = {"size": s.size, "batch": 1, "working": [h, w], "photo": [H, W], "preview": s.preview,
           "points": len(hints), "repeat": s.repeat, "warmup": s.warmup, "engine": colorizer.description,
           "random_hinted_model": stand_in, "ms_with_hints": 1000 * statistics.median(with_t),
           "ms_without_hints": 1000 * statistics.median(without_t), "ms_hint_map": 1000 * statistics.median(map_t)}
    print(f"hints -> preview: working size {s.size} ({w}x{h}), batch 1, photo {W}x{H}, preview {s.preview} px, "
          f"{len(hints)} points; median of {s.repeat} after {s.warmup} warm-up [{colorizer.description}]")
    print(f"  with hints:    {doc['ms_with_hints']:.1f} ms (of which the hint map {doc['ms_hint_map']:.1f} ms)")
    print(f"  without hints: {doc['ms_without_hints']:.1f} ms")
    if stand_in:
        print("  these weights take no colour hints: measured with a random-weights hinted model of the same "
              "config (the timing does not depend on trained values)")
    if s.json_path:
        Path(s.json_path).write_text(json.dumps({"device": describe_device(colorizer.runtime.device),
                                                 "cpu": asdict(cpu_info()), "hints_to_preview": doc}, indent=2))
    return 0


def format_table(rows: list[Row], gflops: float, peak: float) -> str:
    head = ("| engine | precision | batch | ms/image | images/s | peak MB | max abs diff | p99.9 abs diff | GFLOP/s "
            "| of conv peak |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [head]
    for r in rows:
        achieved = gflops * r.images_per_s
        lines.append(f"| {r.engine} | {r.precision} | {r.batch} | {r.ms_per_image:.1f} | {r.images_per_s:.2f} | "
                     f"{r.peak_mem_mb:.0f} | {r.max_abs_diff:.3g} | {r.p999_abs_diff:.3g} | {achieved:.0f} | "
                     f"{100 * achieved / peak:.0f}% |")
    return "\n".join(lines)


def best_vs_best(rows: list[Row]) -> list[dict]:
    """Each optimized precision at its best batch size against the baseline at its own best batch size."""
    base = max((r for r in rows if r.engine == "baseline"), key=lambda r: r.images_per_s, default=None)
    if base is None:
        return []
    out = []
    for precision in dict.fromkeys(r.precision for r in rows if r.engine == "optimized"):
        best = max((r for r in rows if r.engine == "optimized" and r.precision == precision),
                   key=lambda r: r.images_per_s)
        mem = best.peak_mem_mb / base.peak_mem_mb if base.peak_mem_mb > 0 else float("nan")
        out.append({"precision": precision, "batch": best.batch, "images_per_s": best.images_per_s,
                    "baseline_batch": base.batch, "baseline_images_per_s": base.images_per_s,
                    "speedup": best.images_per_s / base.images_per_s, "memory_ratio": mem})
    return out


def headline_lines(rows: list[Row]) -> list[str]:
    return [f"best vs best: optimized {b['precision']} at batch {b['batch']} is {b['speedup']:.2f}x the baseline "
            f"at its best batch {b['baseline_batch']} ({b['images_per_s']:.2f} vs "
            f"{b['baseline_images_per_s']:.2f} images/s), {b['memory_ratio']:.2f}x its peak memory"
            for b in best_vs_best(rows)]


def ratio_lines(rows: list[Row]) -> list[str]:
    out = []
    for batch in sorted({r.batch for r in rows}):
        base = next((r for r in rows if r.batch == batch and r.engine == "baseline"), None)
        if base is None:
            continue
        for r in rows:
            if r.batch == batch and r.engine == "optimized":
                mem = r.peak_mem_mb / base.peak_mem_mb if base.peak_mem_mb > 0 else float("nan")
                out.append(f"same batch {batch}: optimized {r.precision} is {r.images_per_s / base.images_per_s:.2f}x "
                           f"the baseline's images/s, {mem:.2f}x its peak memory")
    return out


def _worker_main(arg: str) -> None:
    spec = json.loads(arg)
    st = spec["settings"]
    st["batches"] = tuple(st["batches"])
    st["weights"] = Path(st["weights"]) if st["weights"] else None
    s = BenchSettings(**st)
    res = measure(spec["engine"], spec["precision"], spec["batch"], s, Path(spec["out"]))
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker_main(sys.argv[2])
