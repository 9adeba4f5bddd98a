"""``bench --hints``: what a user waits for in the app after placing a colour hint, with and without hints."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..devices import describe_device
from .hardware import cpu_info
from .inputs import bench_model
from .settings import BenchSettings

if TYPE_CHECKING:
    from ..colorizer import Colorizer


def hint_photo(side: int) -> np.ndarray:
    """The photo hinted: the first sample photo (else smooth noise), resized to longer side ``side``, RGB uint8."""
    import cv2

    from ..imageio import decode
    from ..weights import RESOURCES

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
    from ..colorizer import Colorizer
    from ..hints import HINT_CHANNELS
    from ..model import CVUNet, ModelConfig
    from ..options import ColorizeSettings

    model = bench_model(s.weights)
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

    from ..color import join_lab, to_uint8

    h, w = L.shape
    s = min(1.0, size / max(h, w))
    dsize = (max(1, round(w * s)), max(1, round(h * s)))
    small_L = cv2.resize(L, dsize, interpolation=cv2.INTER_AREA) if s < 1 else L
    ab = cv2.resize(source, dsize, interpolation=cv2.INTER_LINEAR).reshape(dsize[1], dsize[0], 2)
    return to_uint8(join_lab(small_L, ab))


PAUSE_S = 0.5  # a user's pause before placing the next hint: the runtime's worker threads are asleep by then


def run_hints_bench(s: BenchSettings) -> int:
    """Milliseconds from hints to preview: hint map at the working size, the model at batch 1, the preview-size colour
    image; median of ``s.repeat`` rounds, with and without hints, alternating. The photo is decoded and
    prepared once beforehand (the app holds it while the user places hints). Each round also times a hinted call
    after a pause (``PAUSE_S``), as a user meets it: waking PyTorch's OpenMP worker took ~6 ms on a virtual machine.
    """
    from ..colorizer import ab_source, pack, pack_hints, prepare
    from ..hints import simulate_hints

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
    with_t, map_t, without_t, paused_t = [], [], [], []
    for _ in range(s.repeat):
        total, hint_map_s = once(True)
        with_t.append(total)
        map_t.append(hint_map_s)
        without_t.append(once(False)[0])
        time.sleep(PAUSE_S)
        paused_t.append(once(True)[0])
    h, w = item.small.shape
    H, W = item.shape
    doc = {"size": s.size, "batch": 1, "working": [h, w], "photo": [H, W], "preview": s.preview,
           "points": len(hints), "repeat": s.repeat, "warmup": s.warmup, "engine": colorizer.description,
           "random_hinted_model": stand_in, "ms_with_hints": 1000 * statistics.median(with_t),
           "ms_without_hints": 1000 * statistics.median(without_t), "ms_hint_map": 1000 * statistics.median(map_t),
           "ms_with_hints_after_pause": 1000 * statistics.median(paused_t), "pause_s": PAUSE_S}
    print(f"hints -> preview: working size {s.size} ({w}x{h}), batch 1, photo {W}x{H}, preview {s.preview} px, "
          f"{len(hints)} points; median of {s.repeat} after {s.warmup} warm-up [{colorizer.description}]")
    print(f"  with hints:    {doc['ms_with_hints']:.1f} ms (of which the hint map {doc['ms_hint_map']:.1f} ms)")
    print(f"  without hints: {doc['ms_without_hints']:.1f} ms")
    print(f"  with hints after a {PAUSE_S:g} s pause (as a user places the next hint): "
          f"{doc['ms_with_hints_after_pause']:.1f} ms")
    if stand_in:
        print("  these weights take no colour hints: measured with a random-weights hinted model of the same "
              "config (the timing does not depend on trained values)")
    if s.json_path:
        Path(s.json_path).write_text(json.dumps({"device": describe_device(colorizer.runtime.device),
                                                 "cpu": asdict(cpu_info()), "hints_to_preview": doc}, indent=2))
    return 0
