"""Grayscale photo in, colour photo out, at the photo's own size.

The network runs at a working size (longer side ``size``, aspect kept, padded to a multiple
of 32); its ab output is upsampled to the photo's size and joined with the photo's own
full-resolution L, so detail and sharpness come from the original.

Full-resolution work (L, the ab upsampling) goes in horizontal strips, so a photo of tens of
megapixels needs little memory beyond its own pixels.

Out of memory: ``Colorizer.infer_photos`` holds the whole ladder. The batch is split
in halves (``infer``), then each photo is tried alone, at half its working size, and on the CPU;
a photo that fails all of them is reported, never passed off as colour.

Colour hints (a hinted model only): points relative to the upright photo (``engine.hints.Hint``),
made into a hint map at each photo's working size, top-left on the canvas like its L.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np
import torch

from .color import join_lab, lab_to_rgb, lightness, to_uint8
from .devices import best_precision, resolve_device
from .hints import HINT_CHANNELS, Hint, HintSpread, fit_chroma, hint_map, relative_pixel, spread_hints
from .messages import short_reason
from .model import MULTIPLE, CVUNet
from .options import MIN_WORK, ColorizeSettings, engine_device
from .runtimes import Runtime, make_runtime, optimized_or_baseline
from .runtimes.replay import give_back_freed_memory
from .unsure import unsure_map
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


def pack_hints(items: list[Prepared], hints: Sequence[Sequence[Hint]] | None) -> np.ndarray | None:
    """N x 3 x H x W hint maps on ``pack``'s canvas (each at its photo's working size, top-left, zero in the
    padding), or None when no photo has a hint.
    """
    if hints is None or not any(hints):
        return None
    if len(hints) != len(items):
        raise ValueError(f"{len(hints)} hint lists for {len(items)} photos")
    H = padded(max(p.small.shape[0] for p in items))
    W = padded(max(p.small.shape[1] for p in items))
    out = np.zeros((len(items), HINT_CHANNELS, H, W), np.float32)
    for i, (p, points) in enumerate(zip(items, hints, strict=True)):
        h, w = p.small.shape
        out[i, :, :h, :w] = hint_map(points, h, w, L=p.small)
    return out


def spread_on_half(ab_half: np.ndarray, item: Prepared, hints: Sequence[Hint], spread: HintSpread) -> np.ndarray:
    """The network's half-size ab for one photo (2 x H/2 x W/2 of the canvas) with the hints' corrections
    spread over the photo's part of it (``hints.spread_hints``), after the spread's ``gain`` on the network's
    colour; as it is without hints, or with neither spread nor gain.
    """
    if not hints or (spread.reach <= 0 and spread.gain == 1.0):
        return ab_half
    h, w = item.small.shape
    h2, w2 = (h + 1) // 2, (w + 1) // 2
    L_half = cv2.resize(item.small, (w2, h2), interpolation=cv2.INTER_AREA).reshape(h2, w2)
    crop = np.ascontiguousarray(ab_half[:, :h2, :w2].transpose(1, 2, 0))
    if spread.gain != 1.0:
        crop *= np.float32(spread.gain)
    out = ab_half.copy()
    out[:, :h2, :w2] = spread_hints(L_half, crop, hints, spread).transpose(2, 0, 1)
    return out


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


Hints = Sequence[Sequence[Hint]]  # one sequence of hints per photo


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
        if settings.by_look:
            raise ValueError("the model is chosen by the photos' look before it is built (engine.batch.model_choice)")
        device = resolve_device(engine_device(settings.engine, settings.device))
        precision = settings.precision
        if settings.engine == "baseline":
            precision = "fp32"
        elif precision == "auto":
            precision = best_precision(device)
        model = model if model is not None else load_model(settings.weights)
        runtime = make_runtime(settings.engine, model, device, precision, compile=settings.compile)
        return cls(runtime, replace(settings, device=device.type, precision=precision), model)

    @property
    def description(self) -> str:
        return f"{self.runtime.name} {self.runtime.precision} on {self.runtime.device.type}"

    @property
    def takes_hints(self) -> bool:
        """Whether the model reads colour hints (weights trained with ``--hint-channels 3``)."""
        return self.model.config.hint_channels > 0

    def check_hints(self, hints: Hints | None) -> None:
        if hints is not None and any(hints) and not self.takes_hints:
            raise ValueError("these weights take no colour hints: colorize without hints, or use weights "
                             "trained with --hint-channels 3")

    def spread(self, ab_half: np.ndarray, item: Prepared, hints: Sequence[Hint] = ()) -> np.ndarray:
        """One photo's network output, after the hint gain, with its hints' corrections spread (``spread_on_half``)."""
        return spread_on_half(ab_half, item, hints, self.model.readout.spread)

    def infer(self, canvas: np.ndarray, hints: np.ndarray | None = None) -> np.ndarray:
        """The network on a packed canvas (N x 1 x H x W; hint maps N x 3 x H x W) -> half-size ab (N x 2 x H/2 x W/2).

        Out of memory on a batch: the batch is split in halves and retried, and later batches
        are kept at the size that was tried last. A single photo out of memory raises.
        """
        n = len(canvas)
        limit = self.batch_limit

        def part(a: int, b: int) -> np.ndarray | None:
            return None if hints is None else hints[a:b]

        if limit is not None and n > limit:
            return np.concatenate([self.infer(canvas[i : i + limit], part(i, i + limit)) for i in range(0, n, limit)])
        try:
            with torch.inference_mode():
                return self.runtime.run(canvas) if hints is None else self.runtime.run(canvas, hints)
        except Exception as err:
            if n == 1 or not is_out_of_memory(err):
                raise
            self.free_memory()
            half = (n + 1) // 2
            self.batch_limit = half
            self.oom_splits += 1
            log.info("out of memory on a batch of %d: retrying in batches of %d", n, half)
        return np.concatenate([self.infer(canvas[:half], part(0, half)), self.infer(canvas[half:], part(half, n))])

    @property
    def on_cpu(self) -> bool:
        return self.runtime.device.type == "cpu"

    @property
    def where(self) -> str:
        """Where the model runs, for messages."""
        return "on the CPU" if self.on_cpu else "on the GPU"

    def free_memory(self) -> None:
        """Give back what the runtime keeps between calls (buffer pool, CUDA graphs, cached blocks)."""
        self.runtime.release_memory()
        if self._cpu_runtime is not None:
            self._cpu_runtime.release_memory()
        gc.collect()
        if not self.on_cpu and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def release_buffers(self) -> None:
        """Between batches: the runtime's reusable buffers go back to the system; what is slow to make again stays."""
        self.runtime.release_buffers()
        if self._cpu_runtime is not None:
            self._cpu_runtime.release_buffers()
        gc.collect()
        give_back_freed_memory()

    def infer_on_cpu(self, canvas: np.ndarray, hints: np.ndarray | None = None) -> np.ndarray:
        """The same model in fp32 on the CPU (built on first use): the last resort after the GPU ran out of memory."""
        if self._cpu_runtime is None:
            self._cpu_runtime = optimized_or_baseline(self.model, torch.device("cpu"))
        with torch.inference_mode():
            return self._cpu_runtime.run(canvas) if hints is None else self._cpu_runtime.run(canvas, hints)

    def infer_photos(self, items: list[Prepared], hints: Hints | None = None) -> list[Inference]:
        """The network on prepared photos, with the whole out-of-memory ladder; one ``Inference`` each, in order.

        Out of memory: the batch is split in halves (``infer``); if a photo alone still does not fit,
        every photo of the batch is retried on its own (``_rescue``). Other errors raise: the caller
        fails the batch. ``hints``: one sequence of hints per photo (a hinted model only).
        """
        self.check_hints(hints)
        splits = self.oom_splits
        try:
            ab = self.infer(pack(items), pack_hints(items, hints))
        except Exception as err:
            if not is_out_of_memory(err):
                raise
            self.free_memory()
            return [self._rescue(item, hints[i] if hints is not None else ()) for i, item in enumerate(items)]
        note = f"out of memory {self.where}: colorized in smaller batches" if self.oom_splits != splits else ""
        return [Inference(self.spread(ab[i], item, hints[i] if hints is not None else ()), item, note)
                for i, item in enumerate(items)]

    def _rescue(self, item: Prepared, hints: Sequence[Hint] = ()) -> Inference:
        """One photo the device had no memory for, tried alone, at half its working size, then on the CPU.

        Never the grey input passed off as colour: ``ab`` is None with the reason if all fail.
        """
        where = self.where
        attempts: list[tuple[str, Prepared, Callable[[np.ndarray, np.ndarray | None], np.ndarray]]] = [
            ("", item, self.infer)]
        size = max(item.small.shape)
        if size // 2 >= MIN_WORK:
            attempts.append((f"colorized at working size {size // 2}", reprepare(item, size // 2), self.infer))
        if not self.on_cpu:
            attempts.append(("colorized on the CPU", item, self.infer_on_cpu))
        last: BaseException | None = None
        for note, tried, infer in attempts:
            try:
                ab = infer(pack([tried]), pack_hints([tried], [hints]))[0]  # hints made at the size tried
                ab = self.spread(ab, tried, hints)
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

    def predict(self, items: list[Prepared], hints: Hints | None = None) -> list[np.ndarray]:
        """Full-size ab (H x W x 2 float32) for each prepared photo, in one network call.

        ``hints``: one sequence of hints per photo (a hinted model only).
        """
        if not items:
            return []
        self.check_hints(hints)
        ab = self.infer(pack(items), pack_hints(items, hints))
        return [unpack(self.spread(ab[i], p, hints[i] if hints is not None else ()), p) for i, p in enumerate(items)]

    def colorize(self, image: np.ndarray, hints: Sequence[Hint] = ()) -> np.ndarray:
        """A grey (H x W) or RGB (H x W x 3) photo -> H x W x 3 uint8 RGB colour version.

        ``hints``: colour hints at points of the upright photo (a hinted model only; only their chroma is used).
        """
        item = prepare(image, self.settings.size)
        ab = self.predict([item], [hints] if hints else None)[0]
        return to_uint8(join_lab(item.L, ab))

    def suggest(self, image: np.ndarray, x: float, y: float, k: int = 3,
                hints: Sequence[Hint] = ()) -> list[tuple[int, int, int]]:
        """The model's k most likely colours at a point (relative x, y in the upright photo), most likely first.

        The modes of the model's ab distribution at that pixel (at its temperature), as sRGB at the
        photo's own lightness there: what the app offers as hint colours. Runs the textbook model on
        the CPU, one photo (fp32).
        """
        if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
            raise ValueError(f"a point's x and y are relative (0..1), got ({x}, {y})")
        item, logits = self._cpu_logits(image, hints)
        model = self.model
        with torch.inference_mode():
            probs = model.readout.probabilities(logits)[0]
        h, w = item.small.shape
        r, c = (v // 4 for v in relative_pixel(x, y, h, w))  # the distribution is at a quarter of the working size
        p = probs[:, r, c].double().numpy()
        R, C = relative_pixel(x, y, *item.shape)
        return colour_modes(p, model.bins.double().numpy(), float(item.L[R, C]), k)


    def doubt(self, image: np.ndarray, hints: Sequence[Hint] = ()) -> np.ndarray:
        """Where the colour is the model's unsure guess, less where ``hints`` decide it (``unsure.unsure_map``):
        H x W float32 at the photo's size, 0 .. 1. The textbook model on the CPU in fp32, one photo, as ``suggest``.
        """
        item, logits = self._cpu_logits(image, hints)
        return unsure_map(self.model, logits, item.small, item.shape, hints)

    def _cpu_logits(self, image: np.ndarray, hints: Sequence[Hint]) -> tuple[Prepared, torch.Tensor]:
        """One photo's ab-bin logits (1 x Q x H/4 x W/4) from the textbook model on the CPU in fp32, as
        ``load_model`` gives it: ``suggest`` and ``doubt`` read the distribution, which no runtime returns.
        """
        self.check_hints([hints] if hints else None)
        item = prepare(image, self.settings.size)
        canvas, hint_canvas = pack([item]), pack_hints([item], [hints] if hints else None)
        with torch.inference_mode():
            h_t = None if hint_canvas is None else torch.from_numpy(hint_canvas)
            return item, self.model.eval().logits(torch.from_numpy(canvas), h_t)[0]


MODE_MERGE = 10.0  # ab units: modes closer than this are one colour


def colour_modes(p: np.ndarray, centres: np.ndarray, L: float, k: int) -> list[tuple[int, int, int]]:
    """Up to k distinct sRGB colours at lightness L from a distribution ``p`` over ab bins ``centres`` (Q x 2).

    Local maxima of p over neighbouring bins, most likely first, each refined to the mean of its
    neighbourhood; modes closer than MODE_MERGE are merged; then the likeliest other bins fill up to k.
    """
    d = np.sqrt(((centres[:, None, :] - centres[None, :, :]) ** 2).sum(-1))
    step = float(np.median(np.sort(d, axis=1)[:, 1])) if len(centres) > 1 else 1.0  # the bin spacing
    near = d <= 1.5 * step  # a bin and its 8 neighbours on the grid
    peak = np.array([p[i] >= p[near[i]].max() for i in range(len(p))])
    order = sorted(range(len(p)), key=lambda i: (not peak[i], -p[i]))
    picked: list[np.ndarray] = []
    colours: list[tuple[int, int, int]] = []
    for i in order:
        if len(colours) == k:
            break
        ab = (p[near[i], None] * centres[near[i]]).sum(0) / p[near[i]].sum() if peak[i] else centres[i]
        if any(np.hypot(*(ab - q)) < MODE_MERGE for q in picked):
            continue
        a, b = fit_chroma(np.array([L], np.float32), ab[None].astype(np.float32))[0]
        rgb = to_uint8(lab_to_rgb(np.array([[[L, a, b]]], np.float32)))[0, 0]
        colour = (int(rgb[0]), int(rgb[1]), int(rgb[2]))
        if colour in colours:
            continue
        picked.append(ab)
        colours.append(colour)
    return colours
