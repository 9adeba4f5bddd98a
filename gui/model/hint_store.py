"""Colour hints per photo: they belong to the photo (its path), not to a queue row, so they are remembered
across restarts (QSettings, one JSON document, written half a second after the last change and at close, not
on every drag) and come back when the photo is queued again. Photos that no longer exist are dropped at start.

Files: File > Save Hints… / Load Hints… write and read the CLI's hints file (``engine.hints``), keyed by
each photo's path relative to the folder it was queued from (``photo_key``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QTimer, Signal
from PySide6.QtGui import QUndoCommand

from engine.hints import (
    Hint,
    HintMatch,
    HintsFileError,
    hints_document,
    load_hints_file,
    match_hints,
    parse_hints,
    photo_key,
    save_hints_file,
)
from engine.messages import counted
from engine.options import Job

NO_HINTS_TEXT = "These weights take no colour hints; the shipped model does."
SETTINGS_KEY = "hints/photos"
SAVE_DELAY_MS = 500  # a drag or a run of Undos is one write
Hints = tuple[Hint, ...]


def path_key(path: Path) -> str:
    """The key a photo's hints are remembered under: its resolved path (one key however it was reached)."""
    return str(Path(path).resolve())


RECENT_COLOURS = 6  # colours offered under "Used before"
RECENT_KEY = "hints/recent_colours"


def saved_colours(settings: QSettings) -> list[tuple[int, int, int]]:
    """The "Used before" colours as last saved (``HintStore.flush``), newest first; none where it is damaged."""
    try:
        colours = json.loads(str(settings.value(RECENT_KEY, "[]")))
        return [(int(r), int(g), int(b)) for r, g, b in colours if all(0 <= int(c) <= 255 for c in (r, g, b))]
    except (ValueError, TypeError):
        return []


class HintStore(QObject):
    """Each photo's hints by path; ``changed(path)`` after every change, saved shortly after (``flush``)."""

    changed = Signal(str)  # path_key of the photo whose hints changed; "" when several changed at once

    def __init__(self, settings: QSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.qsettings = settings
        self._hints: dict[str, Hints] = {}
        raw = settings.value(SETTINGS_KEY, "")
        if raw:
            try:
                self._hints = {k: tuple(v) for k, v in parse_hints(json.loads(str(raw)), "saved hints").photos.items()
                               if Path(k).exists()}
            except (ValueError, HintsFileError):  # damaged settings must not stop the app
                self._hints = {}
        placed = [h.rgb for hints in reversed(list(self._hints.values())) for h in reversed(hints)]
        self._recent: list[tuple[int, int, int]] = list(dict.fromkeys([*saved_colours(settings), *placed]))[
            :RECENT_COLOURS]  # those of hints since deleted too: a colour found with Other… outlives its hint
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.flush)

    def get(self, path: Path) -> Hints:
        return self._hints.get(path_key(path), ())

    def set(self, path: Path, hints: Sequence[Hint]) -> None:
        """Replace a photo's hints (empty: forget them) and remember the change."""
        self.set_many({path: hints})

    def set_many(self, hints_by_path: Mapping[Path, Sequence[Hint]]) -> None:
        """Replace several photos' hints with one ``changed`` signal (the photo's key, or "" for several)."""
        changed = []
        for path, hints in hints_by_path.items():
            key, hints = path_key(path), tuple(hints)
            if self._hints.get(key, ()) == hints:
                continue
            placed = [h.rgb for h in hints if h.rgb not in {old.rgb for old in self._hints.get(key, ())}]
            self._recent = list(dict.fromkeys([*reversed(placed), *self._recent]))[:RECENT_COLOURS]
            if hints:
                self._hints[key] = hints
            else:
                self._hints.pop(key, None)
            changed.append(key)
        if changed:
            self._save_timer.start()
            self.changed.emit(changed[0] if len(changed) == 1 else "")

    def recent_colours(self) -> list[tuple[int, int, int]]:
        """The colours last given to hints, newest first, each once (a hint moved or a photo's hints undone give
        none; at the start, those saved before, then those of the hints remembered): a colour found with Other… is
        one click away for the next hint, on this photo or another, after a restart too.
        """
        return list(self._recent)

    def flush(self) -> None:
        """Write the hints to the settings now (the timer after a change, and at close)."""
        self._save_timer.stop()
        self.qsettings.setValue(SETTINGS_KEY, json.dumps(hints_document(self._hints)))
        self.qsettings.setValue(RECENT_KEY, json.dumps(self._recent))
        self.qsettings.sync()

    def save_file(self, path: Path, photos: Iterable[tuple[Path, Path]]) -> int:
        """Write the hints of ``photos`` ((path, root) pairs, the queue) as a hints file; returns how many photos."""
        mapping: dict[str, Hints] = {}
        for photo, root in photos:
            hints = self.get(photo)
            if hints:
                mapping[photo_key(Job(0, photo, root))] = hints
        save_hints_file(path, mapping)
        return len(mapping)

    @staticmethod
    def read_file(path: Path, photos: Sequence[tuple[Path, Path]]) -> HintMatch:
        """A hints file matched to ``photos`` (by index into it); ``HintsFileError`` with a one-line reason."""
        return match_hints(load_hints_file(path), [Job(i, p, r) for i, (p, r) in enumerate(photos)])


def load_summary(match: HintMatch, source: Path) -> str:
    """The status line after loading a hints file: how many photos got hints, and which keys were not used."""
    n = sum(1 for h in match.hints.values() if h)
    text = f"Loaded hints for {counted(n, 'photo')} from {source.name}"
    if match.unmatched:
        text += f"; not in the queue: {', '.join(match.unmatched[:3])}{'…' if len(match.unmatched) > 3 else ''}"
    if match.ambiguous:
        text += f"; more than one photo of that name: {', '.join(match.ambiguous[:3])}"
    return text


class SetHints(QUndoCommand):
    """Photos' hints before and after an edit (add, move, remove, or a whole loaded file): redo sets the ``after``
    of each, undo its ``before``; one ``changed`` signal however many photos.
    """

    def __init__(self, store: HintStore, changes: Mapping[Path, tuple[Sequence[Hint], Sequence[Hint]]],
                 text: str) -> None:
        super().__init__(text)
        self.store = store
        self.changes = {path: (tuple(before), tuple(after)) for path, (before, after) in changes.items()}

    def redo(self) -> None:
        self.store.set_many({path: after for path, (_, after) in self.changes.items()})

    def undo(self) -> None:
        self.store.set_many({path: before for path, (before, _) in self.changes.items()})
