"""The timings behind engine/batch/quiet.py: batches with the model calls alone and with I/O beside them.

    python tools/quiet_gate_timing.py > docs/quiet-gate-timing.txt

Makes its own inputs from resources/samples (grey JPEGs: 16 enlarged to 3200 x 2400, and 40 at their own
size), then runs the same batch with each gate in turn, four times, and compare mode (optimized against
baseline) three times each way. Side by side in one run; read the ratios, not the absolute times.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.batch.pipeline as pipeline_module  # noqa: E402
from engine.batch.inputs import collect_inputs  # noqa: E402
from engine.batch.quiet import NoGate, QuietGate  # noqa: E402
from engine.colorizer import Colorizer  # noqa: E402
from engine.options import ColorizeSettings, ExportOptions  # noqa: E402


def make_inputs(folder: Path, n: int, size: tuple[int, int] | None) -> None:
    samples = sorted((ROOT / "resources" / "samples").glob("*.jpg"))
    folder.mkdir(parents=True)
    for i in range(n):
        grey = cv2.imread(str(samples[i % len(samples)]), cv2.IMREAD_GRAYSCALE)
        if size is not None:
            grey = cv2.resize(grey, size, interpolation=cv2.INTER_CUBIC)
        cv2.imwrite(str(folder / f"p{i:02d}.jpg"), grey, [cv2.IMWRITE_JPEG_QUALITY, 92])


def run(colorizer: Colorizer, jobs: list, out: Path, gate: type, compare: Colorizer | None = None):
    shutil.rmtree(out, ignore_errors=True)
    pipeline = pipeline_module.BatchPipeline(colorizer, ExportOptions(out), compare=compare)
    pipeline._gate = gate()
    return pipeline.run(jobs)


def main() -> int:
    work = Path(tempfile.mkdtemp())
    try:
        make_inputs(work / "large", 16, (3200, 2400))
        make_inputs(work / "small", 40, None)
        ours = Colorizer.create(ColorizeSettings(batch_size=4))
        base = Colorizer.create(ColorizeSettings(engine="baseline", batch_size=4), model=ours.model)
        print(f"engine: {ours.description}; baseline: {base.description}")
        for name in ("large", "small"):
            jobs, _ = collect_inputs([work / name])
            for k in range(4):
                for gate in (NoGate, QuietGate):
                    s = run(ours, jobs, work / "out", gate)
                    print(f"{name} ({len(jobs)} photos) run {k} {gate.__name__:10s} wall {s.wall_s:5.2f} s, "
                          f"model {s.infer_s:5.2f} s, {s.photos_per_s:5.2f} photos/s", flush=True)
        jobs, _ = collect_inputs([work / "large"])
        for k in range(3):
            for gate in (NoGate, QuietGate):
                s = run(ours, jobs, work / "out", gate, compare=base)
                print(f"compare, large, run {k} {gate.__name__:10s} speed-up {s.compare_speedup:.2f}x "
                      f"(optimized {s.compared_infer_s:.2f} s, baseline {s.compare_infer_s:.2f} s)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
