"""Grayscale photo in, colour photo out, at the photo's own size.

The network runs at a working size (longer side ``size``, aspect kept, padded to a multiple
of 32); its ab output is upsampled to the photo's size and joined with the photo's own
full-resolution L, so detail and sharpness come from the original.

Full-resolution work (L, the ab upsampling) goes in horizontal strips, so a photo of tens of
megapixels needs little memory beyond its own pixels.

Out of memory on the device: ``Colorizer.infer_photos`` holds the whole ladder. The batch is split
in halves (``infer``), then each photo is tried alone, at half its working size, and on the CPU;
a photo that fails all of them is reported, never passed off as colour.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import cv2
import numpy as np
import torch

from .color import join_lab, lightness, to_uint8
from .devices import best_precision, resolve_device
from .messages import short_reason
from .model import MULTIPLE, CVUNet
from .options import MIN_WORK, ColorizeSettings
from .runtimes import Runtime, make_runtime
from .weights import load_model

log = logging.getLogger(__name__)


def is_out_of_memory(err: BaseException) -> bool:
    """Whether an exception from a runtime means memory ran out (CUDA, or the CPU allocator)."""
    if isinstance(err, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    if isinstance(err, RuntimeError):
        text = str(err).lower()
        return any(k in text for k in ("out of memory", "can't allocate memory", "alloc_failed",
                                       "not enough memory"))
    return False


@dataclass(frozen=True)
class Prepared:
    """One photo ready for the network: its full-size L and its working-size L."""

    L: np.ndarray  # H x W float32, 0..100, full resolution
    small: np.ndarray  # h x w float32 at the working size

    @property
    def shape(self) -> tuple[int, int]:
        return self.L.shape[0], self.L.shape[1]


def working_shape(h: int, w: int, size: int) -> tuple[int, int]:
    """Longer side = size (never upscaling a photo beyond its own size, but at least MIN_WORK)."""
    target = max(min(size, max(h, w)), MIN_WORK)
    s = target / max(h, w)
    return max(1, round(h * s)), max(1, round(w * s))


def padded(n: int) -> int:
    return max(MULTIPLE, math.ceil(n / MULTIPLE) * MULTIPLE)


def _working_L(L: np.ndarray, size: int) -> np.ndarray:
    h, w = working_shape(L.shape[0], L.shape[1], size)
    interp = cv2.INTER_AREA if h < L.shape[0] else cv2.INTER_LINEAR
    small = cv2.resize(L, (w, h), interpolation=interp) if (h, w) != L.shape else L
    return np.ascontiguousarray(small, dtype=np.float32).reshape(h, w)


def prepare(image: np.ndarray, size: int) -> Prepared:
    """image: H x W grey or H x W x 3 RGB, uint8/uint16/float 0..1."""
    L = lightness(image)
    return Prepared(L, _working_L(L, size))


def reprepare(item: Prepared, size: int) -> Prepared:
    """The same photo at another working size (the full-size L is shared, not copied)."""
    return Prepared(item.L, _working_L(item.L, size))


def pack(items: list[Prepared]) -> np.ndarray:
    """N x 1 x H x W canvas: each working-size L top-left, mirrored into the padding."""
    H = padded(max(p.small.shape[0] for p in items))
    W = padded(max(p.small.shape[1] for p in items))
    batch = np.empty((len(items), 1, H, W), np.float32)
    for i, p in enumerate(items):
        h, w = p.small.shape
        border = cv2.BORDER_REFLECT_101 if min(h, w) > 1 else cv2.BORDER_REPLICATE
        if h > 1 and w > 1 and (H - h >= h or W - w >= w):
            border = cv2.BORDER_REPLICATE  # a reflection cannot be wider than the image
        batch[i, 0] = cv2.copyMakeBorder(p.small, 0, H - h, 0, W - w, border)
    return batch


def ab_source(ab_half: np.ndarray, item: Prepared) -> np.ndarray:
    """The network's half-size ab for one photo, cropped and resized to full width: h' x W x 2.

    Small (h' is at most half the working size); ``ab_rows`` makes full-resolution rows from it.
    """
    h, w = item.small.shape
    crop = np.ascontiguousarray(ab_half[:, : (h + 1) // 2, : (w + 1) // 2].transpose(1, 2, 0))
    W = item.shape[1]
    return cv2.resize(crop, (W, crop.shape[0]), interpolation=cv2.INTER_LINEAR).reshape(crop.shape[0], W, 2)


def _rows_axis(n_dst: int, n_src: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear source rows and weights, with OpenCV's INTER_LINEAR pixel-centre convention."""
    src = (np.arange(n_dst, dtype=np.float64) + 0.5) * (n_src / n_dst) - 0.5
    src = np.clip(src, 0.0, n_src - 1)
    i0 = np.floor(src).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_src - 1)
    return i0, i1, (src - i0).astype(np.float32)


def ab_rows(source: np.ndarray, height: int, r0: int, r1: int) -> np.ndarray:
    """Rows r0..r1 of the full-size ab (of ``height`` rows) from ``ab_source``'s output."""
    i0, i1, f = _rows_axis(height, source.shape[0])
    f = f[r0:r1, None, None]
    out = source[i0[r0:r1]] * (1.0 - f)
    out += source[i1[r0:r1]] * f
    return out


def unpack(ab_half: np.ndarray, item: Prepared) -> np.ndarray:
    """The network's half-size ab for one photo -> H x W x 2 at the photo's full size."""
    H = item.shape[0]
    return ab_rows(ab_source(ab_half, item), H, 0, H)


@dataclass(frozen=True)
class Inference:
    """One photo's network output from ``Colorizer.infer_photos``.

    ``ab`` is the half-size ab (None: the photo could not be colorized, ``note`` says why); ``item``
    is what it was made from (a smaller working size after running out of memory); ``batched``:
    made by the batch call, so comparable with another engine's run of the same canvas.
    """

    ab: np.ndarray | None
    item: Prepared
    note: str = ""
    batched: bool = True


class Colorizer:
    """The numpy-facing engine: build once with ``create``, then ``colorize`` many photos."""

    def __init__(self, runtime: Runtime, settings: ColorizeSettings, model: CVUNet) -> None:
        self.runtime = runtime
        self.settings = settings
        self.model = model
        self.batch_limit: int | None = None  # set after the device ran out of memory on a larger batch
        self.oom_splits = 0  # how many times a batch was split after running out of memory
        self._cpu_runtime: Runtime | None = None

    @classmethod
    def create(cls, settings: ColorizeSettings = ColorizeSettings(), model: CVUNet | None = None) -> Colorizer:
        settings = settings.validated()
        device = resolve_device(settings.device)
        precision = best_precision(device) if settings.precision == "auto" else settings.precision
        if settings.engine == "baseline":
            precision = "fp32"
        model = model if model is not None else load_model(settings.weights)
        runtime = make_runtime(settings.engine, model, device, precision, compile=settings.compile)
        return cls(runtime, replace(settings, device=device.type, precision=precision), model)

    @property
    def description(self) -> str:
        return f"{self.runtime.name} {self.runtime.precision} on {self.runtime.device.type}"

    def infer(self, canvas: np.ndarray) -> np.ndarray:
        """The network on a packed canvas (N x 1 x H x W) -> half-size ab (N x 2 x H/2 x W/2).

        Out of memory on a batch: the batch is split in halves and retried, and later batches
        are kept at the size that was tried last. A single photo out of memory raises.
        """
        n = len(canvas)
        limit = self.batch_limit
        if limit is not None and n > limit:
            return np.concatenate([self.infer(canvas[i : i + limit]) for i in range(0, n, limit)])
        try:
            with torch.inference_mode():
                return self.runtime.run(canvas)
        except Exception as err:
            if n == 1 or not is_out_of_memory(err):
                raise
            self.free_memory()
            half = (n + 1) // 2
            self.batch_limit = half
            self.oom_splits += 1
            log.info("out of memory on a batch of %d: retrying in batches of %d", n, half)
        return np.concatenate([self.infer(canvas[:half]), self.infer(canvas[half:])])

    @property
    def on_cpu(self) -> bool:
        return self.runtime.device.type == "cpu"

    @property
    def where(self) -> str:
        """Where the model runs, for messages."""
        return "on the device" if self.on_cpu else "on the GPU"

    def free_memory(self) -> None:
        """Give back what the runtime keeps between calls (buffer pool, CUDA graphs, cached blocks)."""
        self.runtime.release_memory()
        if self._cpu_runtime is not None:
            self._cpu_runtime.release_memory()
        gc.collect()
        if not self.on_cpu and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def infer_on_cpu(self, canvas: np.ndarray) -> np.ndarray:
        """The same model in fp32 on the CPU (built on first use): the last resort after the GPU ran out of memory."""
        if self._cpu_runtime is None:
            cpu = torch.device("cpu")
            try:
                self._cpu_runtime = make_runtime("optimized", self.model, cpu, "fp32")
            except ValueError:  # a model the optimized runtime does not support
                self._cpu_runtime = make_runtime("baseline", self.model, cpu, "fp32")
        with torch.inference_mode():
            return self._cpu_runtime.run(canvas)

    def infer_photos(self, items: list[Prepared]) -> list[Inference]:
        """The network on prepared photos, with the whole out-of-memory ladder; one ``Inference`` each, in order.

        Out of memory: the batch is split in halves (``infer``); if a photo alone still does not fit,
        every photo of the batch is retried on its own (``_rescue``). Other errors raise: the caller
        fails the batch.
        """
        splits = self.oom_splits
        try:
            ab = self.infer(pack(items))
        except Exception as err:
            if not is_out_of_memory(err):
                raise
            self.free_memory()
            return [self._rescue(item) for item in items]
        note = f"out of memory {self.where}: colorized in smaller batches" if self.oom_splits != splits else ""
        return [Inference(ab[i], item, note) for i, item in enumerate(items)]

    def _rescue(self, item: Prepared) -> Inference:
        """One photo the device had no memory for, tried alone, at half its working size, then on the CPU.

        Never the grey input passed off as colour: ``ab`` is None with the reason if all fail.
        """
        where = self.where
        attempts: list[tuple[str, Prepared, Callable[[np.ndarray], np.ndarray]]] = [("", item, self.infer)]
        size = max(item.small.shape)
        if size // 2 >= MIN_WORK:
            attempts.append((f"colorized at working size {size // 2}", reprepare(item, size // 2), self.infer))
        if not self.on_cpu:
            attempts.append(("colorized on the CPU", item, self.infer_on_cpu))
        last: BaseException | None = None
        for note, tried, infer in attempts:
            try:
                ab = infer(pack([tried]))[0]
            except Exception as err:  # noqa: BLE001 - the next rung may work; the last error is reported
                last = err
                if not is_out_of_memory(err):
                    break
                self.free_memory()
                continue
            log.info("out of memory %s: %s", where, note or "retried alone")
            return Inference(ab, tried, f"out of memory {where}: {note or 'colorized alone'}", batched=False)
        assert last is not None  # every attempt failed
        if not is_out_of_memory(last):
            reason = f"colorization failed after running out of memory {where}: {short_reason(last)}"
        else:
            reason = f"colorization failed: out of memory {where} ({short_reason(last)})"
        return Inference(None, item, reason, batched=False)

    def predict(self, items: list[Prepared]) -> list[np.ndarray]:
        """Full-size ab (H x W x 2 float32) for each prepared photo, in one network call."""
        if not items:
            return []
        ab = self.infer(pack(items))
        return [unpack(ab[i], p) for i, p in enumerate(items)]

    def colorize(self, image: np.ndarray) -> np.ndarray:
        """A grey (H x W) or RGB (H x W x 3) photo -> H x W x 3 uint8 RGB colour version."""
        item = prepare(image, self.settings.size)
        ab = self.predict([item])[0]
        return to_uint8(join_lab(item.L, ab))
