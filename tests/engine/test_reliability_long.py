"""Long runs: no leaked file handles or threads, and memory that stays flat from round to round.

150 tiny photos (a mix of sizes and formats, and a few broken files) go through the pipeline three
times; after each round no file descriptor or Python thread opened since the start is still open,
and the resident memory of round 3 is within noise of round 2 (round 1 warms caches and pools).
"""

from __future__ import annotations

import gc
import os
import threading

import psutil
import pytest
from helpers import random_model, write_grey

from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.colorizer import Colorizer
from engine.options import ColorizeSettings, ExportOptions

N = 150
SHAPES = [(24, 32), (32, 24), (40, 40), (17, 60)]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    src = tmp_path_factory.mktemp("long") / "in"
    for i in range(N):
        h, w = SHAPES[i % len(SHAPES)]
        write_grey(src / f"d{i // 50}" / f"p{i:03d}.{('png', 'jpg', 'webp')[i % 3]}", h, w, i)
    for i in range(5):
        (src / f"broken{i}.jpg").write_bytes(b"\xff\xd8\xff" + bytes(i * 10))  # failures must not leak either
    return src


def open_fds() -> set[tuple[int, str]]:
    """(fd, what it points at): a descriptor some earlier test's teardown closes meanwhile is not a leak."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add((int(fd), os.readlink(f"/proc/self/fd/{fd}")))
        except OSError:  # the one listdir itself used, gone already
            pass
    return out


def test_many_photos_leak_no_fds_no_threads_and_memory_stays_flat(photos, tmp_path):
    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=8), model=random_model())
    proc = psutil.Process()
    jobs, _ = collect_inputs([photos])
    assert len(jobs) == N + 5
    gc.collect()
    fds0, threads0 = open_fds(), set(threading.enumerate())
    rss = []
    for round_ in range(3):
        summary = BatchPipeline(colorizer, ExportOptions(tmp_path / f"out{round_}")).run(jobs)
        assert summary.done == N and summary.failed == 5
        gc.collect()
        leaked = open_fds() - fds0
        assert not leaked, f"round {round_}: file descriptors leaked: {sorted(leaked)}"
        left = set(threading.enumerate()) - threads0
        assert not left, f"round {round_}: threads left running: {left}"
        rss.append(proc.memory_info().rss / 2**20)
    assert rss[2] - rss[1] < 50, f"resident memory per round (MB): {rss}"
