#!/usr/bin/env python3
"""The CUDA paths, checked on a machine with a GPU: ``bash scripts/gpu_check.sh OUT`` (this is its body).

Each part has its own time budget and writes what it measured into ``OUT/gpu-check.json`` and
``OUT/gpu-check.md``; a part that fails says why and the next one still runs:

1. the tests that need CUDA (they skip on a CPU machine);
2. the bench on CUDA: baseline, optimized fp32 and fp16 at batches 1 to 64 (each configuration in a fresh
   process: peak memory is its own), CUDA graphs on and off, fp16's agreement with the baseline measured;
3. the out-of-memory ladder, forced by capping the process's GPU memory: every photo must be written, in
   colour (a grey output passed off as a result fails the part);
4. ``colorize`` of a few thousand generated photos with NVML sampled meanwhile: photos/s, model busy, GPU busy
   and memory, and the decode threads the pipeline chose for the cores;
5. training steps per second: the training command's own step (``engine.training.loop.losses``, AdamW) on
   the GPU at its crop and batch size, fp32 and bf16 autocast.

On a machine without CUDA it says so and exits 0.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
       "PYTHONUNBUFFERED": "1"}


def run(cmd: list[str], timeout: float) -> tuple[int, str]:
    """A command's exit status and its output (both streams), or 124 when it ran past ``timeout``."""
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        return 124, out + f"\n(stopped after {timeout:.0f} s)"


def cuda_tests(out: Path) -> dict[str, Any]:
    """The tests that exercise CUDA (runtimes and CLI); pytest-qt and the GUI are not on a GPU machine."""
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestConfigWarning",
           "--ignore-glob=tests/test_gui_*", "-k", "cuda or gpu or fp16 or out_of_memory", "tests"]
    code, text = run(cmd, 70)
    (out / "cuda-tests.txt").write_text(text)
    summary = next((ln for ln in reversed(text.splitlines()) if re.search(r"passed|failed|error|no tests", ln)), "")
    return {"exit_status": code, "summary": summary.strip()}


def bench(out: Path) -> dict[str, Any]:
    """The project's bench on CUDA, with CUDA graphs (batches 1-64) and without (1, 8, 64)."""
    results: dict[str, Any] = {}
    # Each configuration runs in a fresh process (its own peak memory): a CUDA start each, so few batch sizes.
    for name, extra, batches, budget in (("graphs", [], ["1", "4", "16", "64"], 130),
                                         ("no-graphs", ["--no-cuda-graphs"], ["1", "64"], 70)):
        js = out / f"bench-{name}.json"
        code, text = run([PY, "main.py", "bench", "--device", "cuda", "--batch", *batches, "--json", str(js), *extra],
                         budget)
        (out / f"bench-{name}.txt").write_text(text)
        results[name] = json.loads(js.read_text()) if js.is_file() else {"exit_status": code, "tail": text[-800:]}
    return results


def _grey_scans(folder: Path, n: int, size: tuple[int, int], quality: int = 90) -> list[Path]:
    import cv2
    from helpers import grey_photo

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    base = [grey_photo(size[1], size[0], seed) for seed in range(8)]  # a few distinct scans, cycled: fast to make
    for i in range(n):
        path = folder / f"roll {i // 500:02d}" / f"scan {i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        ok, buf = cv2.imencode(".jpg", base[i % len(base)], [cv2.IMWRITE_JPEG_QUALITY, quality])
        assert ok
        path.write_bytes(buf.tobytes())
        paths.append(path)
    return paths


def _chroma(path: Path) -> float:
    import cv2

    bgr = cv2.imread(str(path))
    assert bgr is not None, path
    lab = cv2.cvtColor(bgr.astype(np.float32) / 255.0, cv2.COLOR_BGR2Lab)
    return float(np.hypot(lab[..., 1], lab[..., 2]).mean())


def oom_ladder(out: Path) -> dict[str, Any]:
    """Large photos at batch 16 with the process held to a small share of the GPU's memory."""
    from engine.batch.inputs import collect_inputs
    from engine.batch.pipeline import BatchPipeline
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings, ExportOptions

    total = torch.cuda.get_device_properties(0).total_memory
    cap_gb = 1.5
    torch.cuda.set_per_process_memory_fraction(cap_gb * 2**30 / total)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _grey_scans(Path(tmp) / "in", 24, (4000, 3000))
            jobs, _ = collect_inputs([Path(tmp) / "in"])
            colorizer = Colorizer.create(ColorizeSettings(device="cuda", precision="fp16", batch_size=16, size=2048))
            summary = BatchPipeline(colorizer, ExportOptions(Path(tmp) / "out")).run(jobs)
            grey = [r.source.name for r in summary.results if r.status == "done" and r.output is not None
                    and _chroma(r.output) <= 2.0]
            notes = sorted({r.message for r in summary.results if r.message})
            return {"memory_cap_gb": cap_gb, "photos": len(jobs), "done": summary.done, "failed": summary.failed,
                    "grey_outputs": grey, "notes": notes, "ok": summary.done == len(jobs) and not grey}
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()


class NvmlSampler:
    """GPU busy % and memory every ``every`` s while a command runs (pynvml, from nvidia-ml-py)."""

    def __init__(self, every: float = 0.5) -> None:
        import pynvml

        pynvml.nvmlInit()
        self._nvml = pynvml
        self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.every = every
        self.samples: list[tuple[float, int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
            mem = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
            self.samples.append((time.monotonic(), int(util.gpu), mem.used / 2**20))

    def __enter__(self) -> NvmlSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._nvml.nvmlShutdown()


def colorize_with_nvml(out: Path, photos: int = 2000) -> dict[str, Any]:
    from engine.batch.pipeline import io_threads

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        _grey_scans(Path(tmp) / "in", photos, (1024, 768))
        made_s = time.perf_counter() - t
        cmd = [PY, "main.py", "colorize", str(Path(tmp) / "in"), "--output", str(Path(tmp) / "out"),
               "--device", "cuda", "--batch-size", "16", "--verbose"]
        with NvmlSampler() as nvml:
            code, text = run(cmd, 110)
    (out / "colorize.txt").write_text(text)
    line = next((ln for ln in reversed(text.splitlines()) if "photos/s" in ln), "")
    rate = re.search(r"\(([\d.]+) photos/s\), model busy (\d+)%", line)
    busy = [u for _, u, _ in nvml.samples]
    return {"exit_status": code, "photos": photos, "generated_in_s": round(made_s, 1), "summary": line.strip(),
            "photos_per_s": float(rate.group(1)) if rate else None,
            "model_busy_percent": int(rate.group(2)) if rate else None,
            "gpu_busy_percent_median": float(np.median(busy)) if busy else None,
            "gpu_memory_mb_max": max((m for _, _, m in nvml.samples), default=None),
            "decode_threads": io_threads(), "cores": os.cpu_count(), "nvml_samples": len(nvml.samples)}


def _steps_per_s(bf16: bool, steps: int) -> dict[str, float]:
    from engine.model import CVUNet, ModelConfig
    from engine.training.loop import losses
    from engine.weights import DEFAULT_WEIGHTS, load_model

    device = torch.device("cuda")
    model = load_model(DEFAULT_WEIGHTS) if DEFAULT_WEIGHTS.is_file() else CVUNet(ModelConfig(num_bins=98))
    model = model.to(device).to(memory_format=torch.channels_last).train()  # type: ignore[call-overload]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cpu").manual_seed(0)
    L = (torch.rand(12, 1, 224, 224, generator=g) * 100).to(device).contiguous(memory_format=torch.channels_last)
    ab = ((torch.rand(12, 2, 224, 224, generator=g) - 0.5) * 80).to(device)
    class_w = torch.ones(model.bins.shape[0], device=device)
    torch.cuda.reset_peak_memory_stats()
    for i in range(5 + steps):
        if i == 5:  # after the warm-up steps
            torch.cuda.synchronize()
            t = time.perf_counter()
        loss, _ = losses(model, L, ab, class_w, 10.0, 0.2, None, bf16)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return {"steps_per_s": round(steps / (time.perf_counter() - t), 2),
            "peak_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20)}


def training_steps(out: Path, steps: int = 30) -> dict[str, Any]:
    """The training step itself on the GPU (forward, the training losses, backward, AdamW) at the training's
    batch 12 of 224 px crops; the training command itself runs on the CPU.
    """
    result: dict[str, Any] = {"batch": 12, "crop": 224}
    for name, bf16 in (("fp32", False), ("bf16_autocast", True)):
        result[name] = _steps_per_s(bf16, steps)
        torch.cuda.empty_cache()
    return result


PARTS: list[tuple[str, Callable[[Path], dict[str, Any]]]] = [
    ("cuda_tests", cuda_tests), ("bench", bench), ("oom_ladder", oom_ladder),
    ("colorize_nvml", colorize_with_nvml), ("training", training_steps)]


def report(doc: dict[str, Any]) -> str:
    lines = [f"# GPU check: {doc['device']}", "", f"torch {doc['torch']}, {doc['cores']} cores, "
             f"{doc['wall_s']:.0f} s in all", ""]
    for name, _ in PARTS:
        part = doc["parts"].get(name, {})
        lines += [f"## {name} ({part.get('seconds', 0):.0f} s)", "", "```", json.dumps(part, indent=1)[:4000], "```",
                  ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "gpu-check")
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to check (the CUDA paths need a machine with one)")
        return 0
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                           "cores": os.cpu_count(), "parts": {}}
    start = time.perf_counter()
    for name, part in PARTS:
        t = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            result = part(out)
        except Exception as err:  # noqa: BLE001 - one part failing must not lose the others' figures
            result = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()[-2000:]}
        result["seconds"] = round(time.perf_counter() - t, 1)
        doc["parts"][name] = result
        print(json.dumps(result)[:1500], flush=True)
        doc["wall_s"] = time.perf_counter() - start
        (out / "gpu-check.json").write_text(json.dumps(doc, indent=2))  # after each part: a stop keeps the rest
        (out / "gpu-check.md").write_text(report(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
