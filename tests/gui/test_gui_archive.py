"""A long batch in the window as a big archive meets it: memory bounded by a budget, the batch in the log."""

from __future__ import annotations

import logging
import os
import tracemalloc
from pathlib import Path

from gui.model.previews import PreviewCache


def test_the_preview_cache_is_held_to_its_memory_budget_not_to_the_queue_length():
    import numpy as np

    cache = PreviewCache(budget_mb=1.0, capacity=100)
    L, ab = np.zeros((100, 100), np.float32), np.zeros((100, 100, 2), np.float32)  # 120 kB a preview
    for key in range(50):
        cache.put(key, L.copy(), ab.copy())
    assert cache.nbytes <= 2**20 and len(cache) == 8
    assert cache.get(49) is not None and cache.get(0) is None  # the newest are kept
    cache.put(49, L.copy(), ab.copy())  # the same key again is counted once
    assert len(cache) == 8 and cache.nbytes == 8 * (L.nbytes + ab.nbytes)


def test_a_long_batch_keeps_no_preview_per_photo_beyond_the_cache(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.viewer.previews = PreviewCache(budget_mb=1.0)
    window.queue_presenter.add_paths(grey_photos(36, size=(200, 200)))
    traced: dict[int, int] = {}
    done = [0]

    def count(_result: object) -> None:
        done[0] += 1
        if done[0] in (12, 36):
            traced[done[0]] = tracemalloc.get_traced_memory()[0]

    window.controller.image_done.connect(count)
    tracemalloc.start()
    try:
        with qtbot.waitSignal(window.controller.finished, timeout=120_000) as finished:
            assert window.batch.start_batch()
    finally:
        tracemalloc.stop()
    summary = finished.args[0]
    assert summary.done == 36
    assert all(r.preview is None for r in summary.results)  # the summary keeps figures, not pictures
    assert window.viewer.previews.nbytes <= 2**20
    # Each preview is 480 kB: 24 photos kept would be 11 MB; what grows must not scale with the photos.
    assert traced[36] - traced[12] < 3 * 2**20, (traced[36] - traced[12]) / 2**20


def test_the_log_file_records_each_batch_its_settings_failures_and_end(qtbot, make_window, backend, grey_photos):
    from gui import logfile

    path = logfile.start_file_log()
    assert path is not None and path.parent == Path(os.environ["COLORIZER_LOG_DIR"])
    try:
        window = make_window(backend)
        photos = grey_photos(3)
        broken = photos[0].parent / "broken.png"
        broken.write_bytes(b"not a png")
        window.queue_presenter.add_paths([*photos, broken])
        with qtbot.waitSignal(window.controller.finished, timeout=60_000):
            assert window.batch.start_batch()
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = path.read_text()
    finally:
        logfile.stop_file_log()
    assert "INFO engine.batch.pipeline: batch started: 4 photos with optimized" in text
    assert f"failed: {broken}: " in text
    assert "batch ended (4 queued): 3 photos in" in text and "1 failed" in text
