#!/usr/bin/env python3
"""Soak benchmark: colorize many photos in one batch and watch memory, file handles and threads.

    python scripts/soak.py --photos 1000 --size 256
    python scripts/soak.py --photos 1000 --app          # the window, offscreen, as `main.py FOLDER --start`

Generates N grey photos (a few sizes and formats, cycled) in nested folders, colorizes them
with ``BatchPipeline`` (the shipped weights in resources/models/colorizer.pt if present, else an
untrained model of the same architecture: the memory behaviour is the same, the colours are not)
or, with ``--app``, in the app's window with its previews, queue and charts, samples resident memory,
open file descriptors and Python threads every ``--every`` photos, and prints a table and the largest
RSS growth after the warm-up.

Exit status: 0 when the growth after warm-up stays under ``--max-growth-mb``, every photo was colorized
and (not with ``--app``, whose QApplication keeps its own) no file descriptors or threads are left behind
after the batch; 1 otherwise; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import psutil  # noqa: E402

from engine.batch.inputs import collect_inputs  # noqa: E402
from engine.batch.pipeline import BatchPipeline  # noqa: E402
from engine.colorizer import Colorizer  # noqa: E402
from engine.model import CVUNet, ModelConfig  # noqa: E402
from engine.options import WORKING_SIZE, BatchSummary, ColorizeSettings, ExportOptions, PhotoResult  # noqa: E402
from engine.weights import DEFAULT_WEIGHTS  # noqa: E402


def grey(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = 128 + 60 * np.sin(x / w * 6 + rng.random() * 3) * np.cos(y / h * 4)
    cv2.circle(img, (int(rng.integers(0, w)), int(rng.integers(0, h))), max(1, min(h, w) // 4),
               float(rng.integers(0, 255)), -1)
    img += rng.normal(0, 4, img.shape).astype(np.float32)  # film grain: files of realistic size
    return np.clip(img, 0, 255).astype(np.uint8)


def make_photos(folder: Path, n: int, sizes: list[tuple[int, int]]) -> None:
    exts = [".jpg", ".png", ".jpg", ".tif"]
    for i in range(n):
        w, h = sizes[i % len(sizes)]
        sub = folder / f"{1940 + i // 500}" / f"roll {i // 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        ok, buf = cv2.imencode(exts[i % len(exts)], grey(h, w, i))
        assert ok
        (sub / f"scan {i:05d}{exts[i % len(exts)]}").write_bytes(buf.tobytes())


def parse_sizes(text: str) -> list[tuple[int, int]]:
    try:
        sizes = [tuple(int(v) for v in part.lower().split("x")) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes look like 320x240,240x320: {text!r}") from None
    if not sizes or any(len(s) != 2 or min(s) < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes look like 320x240,240x320: {text!r}")
    return sizes  # type: ignore[return-value]


def run_in_app(folder: Path, out: Path, on_result: Callable[[PhotoResult], None]) -> BatchSummary:
    """``main.py FOLDER --output OUT --start`` in an offscreen window with fresh settings; the summary when done."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from gui.app import build_window, parse_args
    from gui.bridge.worker import Backend

    app = QApplication.instance() or QApplication(["soak"])
    settings = QSettings(str(out.parent / "soak-settings.ini"), QSettings.Format.IniFormat)
    window = build_window(parse_args([str(folder), "--output", str(out)]), Backend(), settings)
    window.resize(1400, 900)
    window.show()
    summaries: list[BatchSummary] = []
    window.controller.image_done.connect(on_result)

    def finished(summary: BatchSummary) -> None:
        summaries.append(summary)
        QTimer.singleShot(0, app.quit)

    window.controller.finished.connect(finished)
    QTimer.singleShot(0, window.batch.start_batch)
    app.exec()
    window.close()
    window.deleteLater()
    app.processEvents()
    return summaries[0] if summaries else BatchSummary(total=0, stopped_reason="the app never finished the batch")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=1000)
    ap.add_argument("--size", type=int, default=WORKING_SIZE, help="working size (longer side)")
    ap.add_argument("--photo-sizes", type=parse_sizes, default=parse_sizes("320x240,240x320,300x300,400x260"),
                    help="generated photo sizes WxH, cycled (default: %(default)s)")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--weights", type=Path, help=f"default: {DEFAULT_WEIGHTS.relative_to(ROOT)} if present")
    ap.add_argument("--every", type=int, default=50, help="sample every N photos")
    ap.add_argument("--warmup", type=int, default=100,
                    help="photos before the baseline sample (pools and caches fill up first)")
    ap.add_argument("--max-growth-mb", type=float, default=64.0)
    ap.add_argument("--keep", action="store_true", help="keep the generated photos and outputs")
    ap.add_argument("--app", action="store_true",
                    help="run the batch in the app's window (offscreen, the app's own settings: working size "
                         f"{WORKING_SIZE}, previews, queue and charts) instead of BatchPipeline")
    args = ap.parse_args(argv)
    if args.photos < 1 or args.every < 1 or args.warmup < 0:
        ap.error("--photos and --every must be positive, --warmup not negative")

    if args.app:  # the window builds its own engine from its settings, as for a user
        print(f"mode: the app's window, offscreen, with its default settings (working size {WORKING_SIZE}, "
              "previews on)")
    else:
        weights = args.weights or (DEFAULT_WEIGHTS if DEFAULT_WEIGHTS.is_file() else None)
        settings = ColorizeSettings(device=args.device, size=args.size, batch_size=args.batch_size, weights=weights)
        if weights is None:
            print(f"note: {DEFAULT_WEIGHTS.relative_to(ROOT)} not found: using an UNTRAINED model "
                  "(same architecture and memory behaviour; the colours mean nothing)")
            colorizer = Colorizer.create(settings, model=CVUNet(ModelConfig()).eval())
        else:
            colorizer = Colorizer.create(settings)
        print(f"engine: {colorizer.description}, weights: {weights or 'untrained'}, working size {args.size}, "
              f"batch {args.batch_size}")

    work = Path(tempfile.mkdtemp(prefix="colorizer-soak-"))
    try:
        t0 = time.perf_counter()
        make_photos(work / "in", args.photos, args.photo_sizes)
        print(f"generated {args.photos} photos in {work / 'in'} ({time.perf_counter() - t0:.1f} s)")
        jobs, problems = collect_inputs([work / "in"])
        assert not problems and len(jobs) == args.photos, problems

        proc = psutil.Process()
        gc.collect()
        fds0, threads0 = proc.num_fds(), threading.active_count()
        rss0 = proc.memory_info().rss
        samples: list[tuple[int, float, int, int, float]] = []  # photos, rss MB, fds, threads, elapsed
        count = 0
        start = time.perf_counter()

        def sample() -> None:
            samples.append((count, proc.memory_info().rss / 2**20, proc.num_fds(), threading.active_count(),
                            time.perf_counter() - start))

        sample()
        warm = min(args.warmup, max(0, args.photos - args.every))
        baseline: list[float] = []

        def on_result(r: PhotoResult) -> None:
            nonlocal count
            count += 1
            if r.status != "done":
                print(f"  {r.source.name}: {r.status}: {r.message}", file=sys.stderr)
            if count % args.every == 0 or count == args.photos:
                sample()
            if count == warm:
                baseline.append(proc.memory_info().rss / 2**20)

        if args.app:
            summary = run_in_app(work / "in", work / "out", on_result)
        else:
            summary = BatchPipeline(colorizer, ExportOptions(work / "out")).run(jobs, on_result=on_result)
        gc.collect()
        fds1, threads1 = proc.num_fds(), threading.active_count()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"{'photos':>7} {'RSS MB':>8} {'vs start':>9} {'vs warm':>8} {'fds':>5} {'threads':>7} {'photos/s':>9}")
    base = baseline[0] if baseline else samples[0][1]
    prev_n, prev_t = 0, 0.0
    for n, rss, fds, threads, t in samples:
        rate = (n - prev_n) / (t - prev_t) if t > prev_t else 0.0
        mark = "" if n >= warm else "  (warm-up)"
        print(f"{n:>7} {rss:>8.1f} {rss - rss0 / 2**20:>+9.1f} {rss - base:>+8.1f} {fds:>5} {threads:>7} "
              f"{rate:>9.1f}{mark}")
        prev_n, prev_t = n, t
    after = [rss for n, rss, *_ in samples if n >= warm]
    growth = max(after) - base if after else 0.0
    print()
    print(summary.line())
    if summary.model_choice:  # auto: a second model loads when the first photo its look calls for comes
        print(f"model: {summary.model_choice}")
    print(f"RSS at warm-up ({warm} photos): {base:.1f} MB; max growth after it: {growth:+.1f} MB "
          f"(limit {args.max_growth_mb:.0f} MB)")
    print(f"after the batch: {fds1} fds (before {fds0}), {threads1} threads (before {threads0})")
    failures = []
    if growth > args.max_growth_mb:
        failures.append(f"memory grew {growth:.1f} MB after warm-up (limit {args.max_growth_mb:.0f} MB)")
    # The QApplication keeps its own event descriptors and a thread for its life: app mode checks memory only.
    if fds1 > fds0 and not args.app:
        failures.append(f"{fds1 - fds0} file descriptors left open")
    if threads1 > threads0 and not args.app:
        failures.append(f"{threads1 - threads0} threads left running")
    if summary.done != args.photos:
        failures.append(f"only {summary.done} of {args.photos} photos colorized")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if not failures:
        print("OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
