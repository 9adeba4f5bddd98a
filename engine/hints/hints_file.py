"""The hints file (``colorize --hints FILE``, and the app's save and load of hints), JSON:

``{"version": 1, "photos": {"scan07.png": [{"x": 0.25, "y": 0.40, "rgb": [200, 150, 120]}]}}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import atomic_write
from .point import Hint

HINTS_FILE_VERSION = 1


class HintsFileError(ValueError):
    """A hints file that cannot be used; the message is one line naming the file and why."""


@dataclass(frozen=True)
class HintsFile:
    """A hints file's content: each key (as written in the file) and its photo's hints, in file order."""

    photos: Mapping[str, tuple[Hint, ...]] = field(default_factory=dict)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _point(raw: object, where: str) -> Hint:
    if not isinstance(raw, dict):
        raise HintsFileError(f"{where}: a point is an object with x, y and rgb")
    missing = [k for k in ("x", "y", "rgb") if k not in raw]
    if missing:
        raise HintsFileError(f"{where}: no {' or '.join(missing)}")
    x, y, rgb = raw["x"], raw["y"], raw["rgb"]
    for name, v in (("x", x), ("y", y)):
        if not _number(v) or not 0.0 <= v <= 1.0:
            raise HintsFileError(f"{where}: {name} must be a number from 0 to 1 (relative to the photo), got {v!r}")
    if not (isinstance(rgb, list) and len(rgb) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in rgb)):
        raise HintsFileError(f"{where}: rgb must be three integers from 0 to 255, got {json.dumps(rgb)}")
    return Hint(float(x), float(y), (rgb[0], rgb[1], rgb[2]))


def parse_hints(doc: object, source: str = "hints file") -> HintsFile:
    """A hints file's decoded JSON -> ``HintsFile``; ``HintsFileError`` (one line, naming ``source``) if malformed."""
    if not isinstance(doc, dict):
        raise HintsFileError(f"{source}: not a hints file (expected a JSON object with version and photos)")
    version = doc.get("version")
    if version != HINTS_FILE_VERSION or isinstance(version, bool):
        raise HintsFileError(f"{source}: version must be {HINTS_FILE_VERSION}, got {json.dumps(version)}")
    photos = doc.get("photos")
    if not isinstance(photos, dict):
        raise HintsFileError(f"{source}: photos must be an object of photo name -> list of points")
    out: dict[str, tuple[Hint, ...]] = {}
    for key, points in photos.items():
        if not key.strip():
            raise HintsFileError(f"{source}: an empty photo name")
        if not isinstance(points, list):
            raise HintsFileError(f"{source}: {json.dumps(key)}: expected a list of points")
        out[key] = tuple(_point(p, f"{source}: {json.dumps(key)} point {i + 1}") for i, p in enumerate(points))
    return HintsFile(out)


def load_hints_file(path: Path | str) -> HintsFile:
    """Read a hints file; ``HintsFileError`` with a one-line reason if it cannot be read or is malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise HintsFileError(f"{path}: cannot read the hints file ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise HintsFileError(f"{path}: not a hints file (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise HintsFileError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    return parse_hints(doc, str(path))


def hints_document(mapping: Mapping[str, Sequence[Hint]]) -> dict:
    """The JSON document of a hints file (what ``save_hints_file`` writes)."""
    return {"version": HINTS_FILE_VERSION,
            "photos": {key: [{"x": h.x, "y": h.y, "rgb": [int(v) for v in h.rgb]} for h in hints]
                       for key, hints in mapping.items()}}


def save_hints_file(path: Path | str, mapping: Mapping[str, Sequence[Hint]] | HintsFile) -> None:
    """Write a hints file atomically: photo key -> its hints (keys as ``match_hints`` reads them)."""
    photos = mapping.photos if isinstance(mapping, HintsFile) else mapping
    data = json.dumps(hints_document(photos), indent=2, ensure_ascii=False) + "\n"
    with atomic_write(Path(path)) as f:
        f.write(data.encode("utf-8"))
