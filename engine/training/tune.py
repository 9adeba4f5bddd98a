"""``python main.py tune PHOTOS --name NAME``: the shipped model taught by a person's own colour photos.

A tune holds out a share of the photos by a fixed rule, trains on the rest for a time budget (no knowledge of
training asked for: the recipe is chosen in docs/experiments), and measures the tuned model against the model it
started from on the held-out share, so the person is told whether it got better, worse, or within chance. The
held-out photos choose nothing (no snapshot, no read-out), so that figure is not flattered.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..atomic import write_text
from ..colorizer import Colorizer
from ..imageio import IMAGE_EXTENSIONS
from ..model import CVUNet
from ..named_models import new_model_path
from ..options import WORKING_SIZE, ColorizeSettings
from ..progress import ProgressBar
from ..tune_rules import FEW_PHOTOS, MAX_PHOTOS, MIN_PHOTOS, held_out_count
from ..tune_rules import HELD_OUT_SHARE as HELD_OUT_SHARE  # the rules, as the tests read them here
from ..tune_rules import MAX_HELD_OUT as MAX_HELD_OUT
from ..tune_rules import MIN_HELD_OUT as MIN_HELD_OUT
from ..weights import DEFAULT_WEIGHTS, load_model, save_weights, stored_config, weights_meta
from .average import blend_into
from .dataset import NEARLY_GREY, PhotoSet, find_photos, read_colour_photo
from .evaluate import compare, evaluate_photos
from .loop import BatchPrefetcher
from .settings import TrainSettings
from .train import PhotoSets, make_trainer

log = logging.getLogger(__name__)

CALIBRATION_STEPS = 8  # steps timed before the schedule's length is set from the time budget


class TuneError(ValueError):
    """The photos given cannot make a tune (one line, for the CLI and the teach dialog)."""


class TuneStopped(RuntimeError):
    """Stopped before its time was up (the dialog's cancel): checkpointed, nothing saved under the name."""


@dataclass(frozen=True)
class Recipe:
    """How a tune trains; the candidates and the rule that chose the default are in docs/experiments."""

    name: str
    lr: float
    first_trained_block: int  # encoder blocks from here on train (99: the encoder stays frozen)
    encoder_lr_scale: float
    keep_readout: bool  # the start's read-out kept; else chosen again on a share of the training photos
    ema_decay: float = 0.0
    blend: float = 1.0  # the tuned weights' share in the end: (1 - blend) * start + blend * tuned
    keep_norm_stats: bool = False  # BatchNorm statistics stay the start's (TrainSettings.keep_norm_stats)


RECIPES = {
    "r1": Recipe("r1", lr=2e-4, first_trained_block=99, encoder_lr_scale=0.0, keep_readout=False),
    "r2": Recipe("r2", lr=1e-4, first_trained_block=5, encoder_lr_scale=0.2, keep_readout=True, ema_decay=0.99,
                 keep_norm_stats=True),
    "r3": Recipe("r3", lr=1e-4, first_trained_block=5, encoder_lr_scale=0.2, keep_readout=True, ema_decay=0.99,
                 blend=0.5, keep_norm_stats=True),
}
DEFAULT_RECIPE = "r2"


@dataclass
class TuneSettings:
    photos: Sequence[Path]  # folders (searched through) and files
    name: str
    minutes: float = 10.0
    base: Path | None = None  # the model tuned from (default: the shipped one)
    recipe: str = DEFAULT_RECIPE
    work: Path | None = None  # checkpoints (default: beside the model, NAME.work)
    resume: bool = False
    replace: bool = False  # an existing model of this name is replaced
    seed: int = 0
    threads: int | None = None
    working_size: int = WORKING_SIZE  # the held-out photos are measured as `colorize` runs them
    batch: int = 12
    crop: int = 224
    examples: int = 6  # held-out photos saved as before/after pictures (the teach dialog shows them)
    degrade_share: float | None = None  # crops given as old-print scans; None: as the start model was trained
    degrade_strength: float | None = None


@dataclass
class Gathered:
    """The photos a tune was given, sorted into those that teach and those that cannot."""

    photos: PhotoSet
    folders: list[str]
    grey: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        out = []
        if self.grey:
            out.append(f"{len(self.grey)} photos skipped as grey or nearly grey (they show no colour to learn), "
                       f"e.g. {self.grey[0]}")
        if self.unreadable:
            out.append(f"{len(self.unreadable)} files skipped as unreadable or too small, e.g. {self.unreadable[0]}")
        return out


def _named_files(paths: Sequence[Path]) -> list[tuple[str, Path]]:
    """(name, file), sorted by name: a folder's photos named by their path inside it, under the folder's own name;
    a file reached twice (a folder and a file or subfolder in it) once.
    """
    named: dict[Path, str] = {}
    for given in paths:
        given = Path(given)
        if given.is_dir():
            found = [(f"{given.resolve().name}/{p.relative_to(given).as_posix()}", p) for p in find_photos(given)]
        elif given.is_file() and given.suffix.lower() in IMAGE_EXTENSIONS:
            found = [(given.name, given)]
        else:
            raise TuneError(f"{given}: no such photo or folder")
        for name, path in found:
            named.setdefault(path.resolve(), name)
    files = sorted((name, path) for path, name in named.items())
    if len(files) > MAX_PHOTOS:  # memory and time: a sample by name hash, never by what the photos are
        log.warning("%d photos given: tuning on %d of them, chosen by a hash of their names", len(files), MAX_PHOTOS)
        files = sorted(sorted(files, key=lambda f: _name_hash(f[0]))[:MAX_PHOTOS])
    return files


def _name_hash(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()


def gather(paths: Sequence[Path]) -> Gathered:
    """Read the colour photos; too few is a TuneError."""
    names: list[str] = []
    images: list[np.ndarray] = []
    grey: list[str] = []
    unreadable: list[str] = []
    seen: set[str] = set()
    for name, path in _named_files(paths):
        try:
            data = path.read_bytes()
        except OSError:
            unreadable.append(name)
            continue
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen:  # a copy under another name: on both sides of the split it would flatter the figure
            continue
        seen.add(digest)
        rgb = read_colour_photo(path, data)
        if isinstance(rgb, str):
            (grey if rgb == NEARLY_GREY else unreadable).append(name)
            continue
        names.append(name)
        images.append(rgb)
    found = Gathered(PhotoSet(names, images), [str(p) for p in paths], grey, unreadable)
    if len(names) < MIN_PHOTOS:
        raise TuneError(f"{len(names)} colour photos found; a tune needs at least {MIN_PHOTOS} "
                        f"(the more of the same people and places, the better)")
    return found


def held_out(names: Sequence[str]) -> set[str]:
    """The fixed rule: the 15% of names (at least 5, at most 150) whose SHA-1 is smallest; the same every run."""
    return set(sorted(names, key=_name_hash)[:held_out_count(len(names))])


def split(photos: PhotoSet) -> tuple[PhotoSet, PhotoSet]:
    """(the photos trained on, the held-out ones)."""
    out = held_out(photos.names)
    keep = [i for i, n in enumerate(photos.names) if n not in out]
    gone = [i for i, n in enumerate(photos.names) if n in out]
    return (PhotoSet([photos.names[i] for i in keep], [photos.images[i] for i in keep]),
            PhotoSet([photos.names[i] for i in gone], [photos.images[i] for i in gone]))


def _same_split_as_before(record: Path, names: list[str], resume: bool) -> None:
    """A resumed tune must hold out the photos it held out before (else trained-on photos would be measured)."""
    if resume and record.is_file() and json.loads(record.read_text()) != names:
        raise TuneError("these photos are not the ones the stopped tune was given (its held-out share would "
                        "change): give the same folders, or start anew without --resume")
    write_text(record, json.dumps(names))


def start_degradation(path: Path, depth: int = 8) -> tuple[float, float]:
    """(degrade share, strength) the model at ``path`` was trained with, from its card: a model trained on old-print
    scans (Old prints) keeps training on them when tuned, else a tune on clean photos wears its hold on scans away
    (docs/experiments, "A tune keeps training on old-print scans"). A tune's card records what it used in turn; one
    taught before it did goes by the model it started from.
    """
    try:
        card = json.loads(weights_meta(path).get("card") or "{}")
    except (OSError, ValueError, TypeError):
        return 0.0, 1.0
    trained = card.get("settings") or card.get("tune") or {}
    if "degrade_share" not in trained and trained.get("start") and Path(trained["start"]).is_file() and depth > 0:
        return start_degradation(Path(trained["start"]), depth - 1)
    strength = trained.get("degrade_strength")
    return float(trained.get("degrade_share") or 0.0), 1.0 if strength is None else float(strength)


def train_settings(s: TuneSettings, recipe: Recipe, work: Path, out: Path) -> TrainSettings:
    """The training a tune runs: from the start model with its hints and its share of old-print scans, bf16 where
    native and faster (``train.resolve_autocast``), checkpoints often.
    """
    share, strength = start_degradation(Path(s.base or DEFAULT_WEIGHTS))
    return TrainSettings(
        data=Path(s.photos[0]), out=out, work=work, steps=10**6, batch=s.batch, size=s.crop, lr=recipe.lr,
        encoder_lr_scale=recipe.encoder_lr_scale, freeze_steps=0, reg_weight=10.0, reg_beta=0.2, rebalance=1.0,
        seed=s.seed, resume=s.resume, init=s.base or DEFAULT_WEIGHTS, val_every=50, ema_decay=recipe.ema_decay,
        tune_fraction=0.0 if recipe.keep_readout else 0.1, threads=s.threads, hint_channels=3,
        first_trained_block=recipe.first_trained_block, autocast="bf16", keep_norm_stats=recipe.keep_norm_stats,
        degrade_share=share if s.degrade_share is None else s.degrade_share,
        degrade_strength=strength if s.degrade_strength is None else s.degrade_strength)


def _readout_share(train: PhotoSet, recipe: Recipe) -> tuple[PhotoSet, PhotoSet]:
    """For a recipe that chooses its read-out again: a tenth of the training photos (at least 3) set aside."""
    if recipe.keep_readout:
        return train, PhotoSet([], [])
    count = max(3, round(0.1 * len(train.names)))
    return (PhotoSet(train.names[count:], train.images[count:]), PhotoSet(train.names[:count], train.images[:count]))


def colorizers(models: dict[str, CVUNet], size: int) -> dict[str, Colorizer]:
    """The models as `colorize` runs them, at its working size: for the figures and the pictures alike."""
    settings = ColorizeSettings(size=size, batch_size=1)
    return {name: Colorizer.create(settings, model=m) for name, m in models.items()}


def measure(runs: dict[str, Colorizer], photos: PhotoSet) -> dict[str, dict]:
    """Each model's evaluate report on the held-out photos."""
    pairs = list(zip(photos.names, photos.images, strict=True))
    return {name: evaluate_photos(c, pairs) for name, c in runs.items()}


def save_examples(runs: dict[str, Colorizer], photos: PhotoSet, reports: dict[str, dict], folder: Path,
                  s: TuneSettings) -> list[dict[str, Any]]:
    """Before/after pictures of some held-out photos (original, start model, tuned), spread over the gains."""
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    gains = [a["psnr"] - b["psnr"] for a, b in zip(reports["tuned"]["rows"], reports["start"]["rows"], strict=True)]
    order = sorted(range(len(gains)), key=lambda i: gains[i])
    picks = sorted({order[round(k * (len(order) - 1) / max(1, s.examples - 1))] for k in range(s.examples)})
    out = []
    for n, i in enumerate(picks):
        rgb = photos.images[i]
        scale = min(1.0, 384 / max(rgb.shape[:2]))
        row: dict[str, Any] = {"name": photos.names[i], "gain_db": round(gains[i], 3)}
        for what, picture in (("original", rgb), *((k, c.colorize(rgb)) for k, c in runs.items())):
            if scale < 1:
                picture = cv2.resize(picture, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
            path = folder / f"{n:02d}_{what}.png"
            cv2.imwrite(str(path), cv2.cvtColor(np.ascontiguousarray(picture), cv2.COLOR_RGB2BGR))
            row[what] = str(path)
        out.append(row)
    return out


def verdict(c: dict) -> str:
    """Better or worse only when the whole 90% interval says so."""
    if c["interval"] is None or c["interval"][0] <= 0.0 <= c["interval"][1]:
        return "within chance"
    return "better" if c["interval"][0] > 0 else "worse"


def run_tune(s: TuneSettings, stop: Callable[[], bool] = lambda: False,
             on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Tune, measure, save under ``s.name``; returns the card. ``stop`` is polled between steps (the dialog's
    cancel); ``on_progress`` gets each step's figures (step, steps, loss, seconds left).
    """
    recipe = RECIPES[s.recipe]
    if s.threads:
        torch.set_num_threads(s.threads)
    torch.manual_seed(s.seed)
    out = new_model_path(s.name, replace=s.replace or s.resume)
    if s.base is not None and Path(s.base).resolve() == out.resolve():
        raise TuneError(f"the model {s.name!r} is the one to start from: give the tuned model another name")
    work = s.work or out.with_suffix(".work")
    if s.resume and not (work / "checkpoint.pt").is_file():
        raise TuneError(f"no stopped tune named {s.name!r} to resume (its checkpoint would be in {work})")
    found = gather(s.photos)
    work.mkdir(parents=True, exist_ok=True)
    for note in found.notes():
        log.warning("%s", note)
    if len(found.photos.names) < FEW_PHOTOS:
        log.warning("only %d colour photos: the tune may not beat the model it starts from, and the figure at the end "
                    "will be uncertain (%d or more is better)", len(found.photos.names), FEW_PHOTOS)
    train, heldout = split(found.photos)
    _same_split_as_before(work / "heldout.json", heldout.names, s.resume)
    train, readout_share = _readout_share(train, recipe)
    log.info("tuning on %d photos; %d held out to measure it (never trained on)", len(train.names),
             len(heldout.names))
    if on_progress is not None:
        on_progress({"event": "photos", "photos": len(found.photos.names), "trained_on": len(train.names),
                     "held_out": len(heldout.names), "notes": found.notes()})
    ts = train_settings(s, recipe, work, out)
    trainer, precision = make_trainer(ts, PhotoSets(train, readout_share, PhotoSet([], [])))
    started = trainer.progress.step
    if _train_for(trainer, ts, train, s.minutes * 60, stop, on_progress):
        raise TuneStopped(f"stopped at step {trainer.progress.step}; `tune --resume` goes on from there")
    tuned, _ = trainer.shipped()
    start = load_model(ts.init)
    if not recipe.keep_readout:
        from .tuning import choose_readout

        row, _rows = choose_readout(tuned, *trainer.crops.tune, ts.colour_target)
        tuned.readout = replace(tuned.readout, temperature=row["temperature"], chroma_gain=row["chroma_gain"])
    if recipe.blend < 1.0:
        tuned = blend_into(start, tuned, recipe.blend)
    if on_progress is not None:
        on_progress({"event": "measuring", "photos": len(heldout.names)})
    runs = colorizers({"tuned": tuned, "start": start}, s.working_size)
    reports = measure(runs, heldout)
    c = compare(reports["tuned"], reports["start"])
    examples = save_examples(runs, heldout, reports, work / "heldout", s)
    card = {
        "name": s.name,
        "tune": {"photos": len(found.photos.names), "trained_on": len(train.names), "folders": found.folders,
                 "skipped_grey": len(found.grey), "skipped_unreadable": len(found.unreadable),
                 "minutes": round(trainer.elapsed() / 60, 1), "steps": trainer.progress.step,
                 "steps_this_run": trainer.progress.step - started,
                 "recipe": asdict(recipe), "precision": precision, "start": str(ts.init),
                 "degrade_share": ts.degrade_share, "degrade_strength": ts.degrade_strength,
                 "heldout": {"photos": len(heldout.names), "names": heldout.names, "gain_db": c["psnr_difference"],
                             "interval": c["interval"], "better_on": c["better_on"], "worse_on": c["worse_on"],
                             "verdict": verdict(c), "colourfulness_ratio": c["colourfulness_ratio"],
                             "colourfulness_ratio_start": c["colourfulness_ratio_other"], "examples": examples},
                 "history": trainer.progress.history},
        "model": stored_config(tuned),
        "torch": torch.__version__,
    }
    save_weights(tuned, out, meta={"card": json.dumps(card)})
    write_text(out.with_suffix(".json"), json.dumps(card, indent=2))
    write_text(out.with_suffix(".md"), card_markdown(card))
    # Only a stopped tune goes on from its checkpoint (tens of MB a model, kept till the model is deleted); the
    # held-out pictures the card shows stay.
    trainer.checkpoint_path.unlink(missing_ok=True)
    return card


def _train_for(trainer: Any, ts: TrainSettings, train: PhotoSet, budget_s: float, stop: Callable[[], bool],
               on_progress: Callable[[dict[str, Any]], None] | None) -> bool:
    """Train until the time budget is spent or ``stop``; whether ``stop`` ended it. The schedule's length is set
    from the time the first steps took; the budget counts the time of earlier runs of a resumed tune.
    """
    p = trainer.progress
    left = budget_s - p.elapsed_before
    prefetch = BatchPrefetcher(train, ts, p.step)
    bar: ProgressBar | None = None
    t0, first, stopped = time.monotonic(), p.step, False
    try:
        while not (stopped := stop()):
            spent = time.monotonic() - t0
            if spent >= left or p.step >= ts.steps:
                break
            if bar is None and p.step - first >= CALIBRATION_STEPS:
                ts.steps = p.step + max(1, int((left - spent) / (spent / (p.step - first))))
                bar = ProgressBar(ts.steps, unit="it", every=10, first=p.step)
            _, L, ab, hints, clean = prefetch.get()
            parts = trainer.step(L, ab, hints, clean)
            p.step += 1
            if p.step % ts.val_every == 0:
                trainer.validate(parts)
            remaining = max(0.0, left - (time.monotonic() - t0))
            if on_progress is not None:
                on_progress({"event": "step", "step": p.step, "steps": None if bar is None else ts.steps, **parts,
                             "seconds_left": remaining})
            if bar is not None:
                bar.update(p.step, " ".join(f"{k} {v:.3f}" for k, v in parts.items()), remaining)
    except KeyboardInterrupt:
        trainer.save_checkpoint()  # what was learned so far: `--resume` goes on from here
        raise
    finally:
        prefetch.close()
        if bar is not None:
            bar.close(keep=True)
    trainer.save_checkpoint()
    return stopped


def card_markdown(card: dict[str, Any]) -> str:
    t, h = card["tune"], card["tune"]["heldout"]
    lo, hi = h["interval"] or (float("nan"), float("nan"))
    return "\n".join([
        f"# {card['name']}", "",
        f"- Tuned from `{t['start']}` on {t['trained_on']} of {t['photos']} colour photos from "
        f"{', '.join(f'`{f}`' for f in t['folders'])} for {t['minutes']} minutes ({t['steps']} steps, "
        f"recipe {t['recipe']['name']}, {t['precision']})"
        + (f"; {t['degrade_share']:.0%} of its crops as old-print scans." if t.get("degrade_share") else "."),
        f"- Measured on the {h['photos']} photos held out of the tune (never trained on): "
        f"{h['gain_db']:+.2f} dB PSNR against the start (90% interval {lo:+.2f} to {hi:+.2f}): {h['verdict']}; "
        f"better on {h['better_on']}, worse on {h['worse_on']}.",
        f"- Colourfulness {h['colourfulness_ratio']:.2f} of the originals' (the start: "
        f"{h['colourfulness_ratio_start']:.2f}).", ""])
