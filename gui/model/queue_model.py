"""The photo queue as a table model: one row per photo, with its status, timings and error."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from engine.options import IN_COLOUR, PhotoResult, Status
from gui.model.request import QueuedPhoto
from gui.model.run_keys import RunKey

STATUSES = (Status.QUEUED, Status.WORKING, Status.DONE, Status.FAILED, Status.SKIPPED)
RUNNABLE = (Status.QUEUED, Status.FAILED)  # what Start picks up: new photos, and retries of failed ones

COLUMNS = ("File", "Size", "Status", "Time", "Model time", "Baseline", "Difference", "Message")
COL_FILE, COL_SIZE, COL_STATUS, COL_TIME, COL_MODEL, COL_BASELINE, COL_DIFF, COL_MESSAGE = range(len(COLUMNS))
COMPARE_COLUMNS = (COL_BASELINE, COL_DIFF)
KEY_ROLE = Qt.ItemDataRole.UserRole + 1
_ROOT = QModelIndex()

_STATUS_COLOURS = {Status.FAILED: QColor(200, 40, 40), Status.DONE: QColor(30, 130, 60),
                   Status.WORKING: QColor(30, 90, 200), Status.SKIPPED: QColor(140, 110, 20)}


@dataclass
class QueueRow:
    key: int
    path: Path
    root: Path
    size_bytes: int
    status: Status = Status.QUEUED
    message: str = ""
    output: Path | None = None
    width: int = 0
    height: int = 0
    decode_ms: float | None = None
    infer_ms: float | None = None
    encode_ms: float | None = None
    baseline_ms: float | None = None
    max_abs_diff: float | None = None  # this photo's largest |ab| difference between the compared engines
    p999_abs_diff: float | None = None  # ... and its 99.9th percentile
    run_key: RunKey | None = None  # the settings of the run that last took this row up (``begin_run``)
    last_output: Path | None = None  # the output an earlier run wrote: a later run replaces it, not a "(1)" copy
    made_by: str = ""  # the model (its name) that made the output last written
    existing: Path | None = None  # skipped as its output exists: that file, shown in the preview (never replaced)

    @property
    def shown_name(self) -> str:
        """The path below the folder it was queued from ("2019/june/a.jpg"), so same-named photos differ."""
        try:
            return self.path.relative_to(self.root).as_posix() if self.root != self.path else self.path.name
        except ValueError:
            return self.path.name

    @property
    def total_ms(self) -> float | None:
        if self.infer_ms is None:
            return None
        return (self.decode_ms or 0.0) + self.infer_ms + (self.encode_ms or 0.0)


def human_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


class QueueModel(QAbstractTableModel):
    """Rows are keyed by a stable integer, so results can find their row after others were removed."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[QueueRow] = []
        self._seen: dict[str, int] = {}  # realpath -> key: a photo is never queued twice
        self._next_key = 0
        self._index: dict[int, int] | None = {}  # key -> row number; None after removals

    # -- Qt model interface -------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if orientation == Qt.Orientation.Horizontal and 0 <= section < len(COLUMNS):
                return COLUMNS[section]
            if orientation == Qt.Orientation.Vertical:
                return str(section + 1)
        if role == Qt.ItemDataRole.ToolTipRole and orientation == Qt.Orientation.Horizontal:
            return {COL_TIME: "decode + model + encode for this photo",
                    COL_MODEL: "model time of the chosen engine for this photo (its share of its batch)",
                    COL_BASELINE: "model time of the baseline engine for this photo (its share of the same batch)",
                    COL_DIFF: "largest |Δab| between the two engines' colour for this photo; "
                              "the batch summary has the speed-up over all photos"}.get(section)
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row, col = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(row, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, col)
        if role == Qt.ItemDataRole.ForegroundRole and col in (COL_STATUS, COL_MESSAGE):
            colour = _STATUS_COLOURS.get(row.status)
            return QBrush(colour) if colour is not None else None
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_SIZE, COL_TIME, COL_MODEL, COL_BASELINE,
                                                                 COL_DIFF):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == KEY_ROLE:
            return row.key
        return None

    def _display(self, row: QueueRow, col: int) -> str:
        if col == COL_FILE:
            return row.shown_name
        if col == COL_SIZE:
            return human_size(row.size_bytes)
        if col == COL_STATUS:
            return row.status
        if col == COL_TIME:
            return _ms(row.total_ms)
        if col == COL_MODEL:
            return _ms(row.infer_ms)
        if col == COL_BASELINE:
            return _ms(row.baseline_ms)
        if col == COL_DIFF:
            return "" if row.max_abs_diff is None else f"{row.max_abs_diff:.3g}"
        if col == COL_MESSAGE:
            return row.message
        return ""

    def _tooltip(self, row: QueueRow, col: int) -> str:
        if col == COL_TIME and row.infer_ms is not None:
            return (f"decode {row.decode_ms or 0:.1f} ms, model {row.infer_ms:.1f} ms, "
                    f"encode {row.encode_ms or 0:.1f} ms")
        if col == COL_DIFF and row.max_abs_diff is not None:
            p999 = "" if row.p999_abs_diff is None else f"; 99.9% of its values within {row.p999_abs_diff:.3g}"
            return (f"|Δab| between the two engines for this photo: largest {row.max_abs_diff:.3g}{p999} "
                    "(Lab a and b, about -110..110; under ~2 is invisible)")
        if col == COL_SIZE and row.width:
            return f"{row.width} × {row.height} px"
        if col == COL_MESSAGE and row.message:
            return row.message
        lines = [str(row.path)]
        if row.output is not None:
            lines.append(f"→ {row.output}")
        return "\n".join(lines)

    # -- queue operations ---------------------------------------------------------------------
    def add(self, items: Iterable[tuple[Path, Path]]) -> tuple[int, int]:
        """Queue (photo, root folder) pairs. Returns (added, already queued)."""
        new: list[QueueRow] = []
        duplicates = 0
        for path, root in items:
            real = os.path.realpath(path)
            if real in self._seen:
                duplicates += 1
                continue
            try:
                size = os.path.getsize(path)
            except OSError:
                size = 0
            row = QueueRow(self._next_key, Path(path), Path(root), size)
            self._next_key += 1
            self._seen[real] = row.key
            new.append(row)
        if new:
            first = len(self._rows)
            if self._index is not None:
                self._index.update((row.key, first + n) for n, row in enumerate(new))
            self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
            self._rows.extend(new)
            self.endInsertRows()
        return len(new), duplicates

    def remove_rows(self, rows: Sequence[int]) -> int:
        """Remove the given row numbers; contiguous runs are removed together, last first."""
        wanted = sorted({r for r in rows if 0 <= r < len(self._rows)}, reverse=True)
        i = 0
        while i < len(wanted):
            last = first = wanted[i]
            while i + 1 < len(wanted) and wanted[i + 1] == first - 1:
                i += 1
                first = wanted[i]
            self.beginRemoveRows(QModelIndex(), first, last)
            for row in self._rows[first : last + 1]:
                self._seen.pop(os.path.realpath(row.path), None)
            del self._rows[first : last + 1]
            self._index = None
            self.endRemoveRows()
            i += 1
        return len(wanted)

    def clear(self) -> None:
        self.beginResetModel()
        self._rows.clear()
        self._seen.clear()
        self._index = {}
        self.endResetModel()

    def insert_rows(self, placed: Iterable[tuple[int, QueueRow]]) -> int:
        """Put removed rows back at their old row numbers, as they were (undo of remove and clear).

        ``placed`` is (row number, row) in ascending row order; a photo queued again meanwhile is not
        queued twice. Returns how many rows came back.
        """
        back = 0
        for position, row in sorted(placed, key=lambda p: p[0]):
            real = os.path.realpath(row.path)
            if real in self._seen:
                continue
            at = min(max(0, position), len(self._rows))
            self.beginInsertRows(QModelIndex(), at, at)
            self._rows.insert(at, row)
            self._seen[real] = row.key
            self._index = None
            self.endInsertRows()
            back += 1
        return back

    def row(self, row: int) -> QueueRow:
        return self._rows[row]

    def row_of(self, key: int) -> int | None:
        if self._index is None:
            self._index = {row.key: i for i, row in enumerate(self._rows)}
        return self._index.get(key)

    def rows(self) -> list[QueueRow]:
        return list(self._rows)

    def runnable(self) -> list[QueuedPhoto]:
        return [QueuedPhoto(r.key, r.path, r.root, replaces=r.output or r.last_output, number=i + 1)
                for i, r in enumerate(self._rows) if r.status in RUNNABLE]

    def counts(self) -> dict[Status, int]:
        out = dict.fromkeys(STATUSES, 0)
        for r in self._rows:
            out[r.status] += 1
        return out

    def has_comparison(self) -> bool:
        return any(r.baseline_ms is not None for r in self._rows)

    def set_status(self, keys: Iterable[int], status: Status, *, only_from: tuple[Status, ...] | None = None,
                   message: str | None = None) -> None:
        for i in self._rows_of(keys):
            row = self._rows[i]
            if only_from is None or row.status in only_from:
                row.status = status
                if message is not None:
                    row.message = message
                self._changed(i)

    def begin_run(self, keys: Iterable[int], run_key: RunKey | None = None) -> None:
        """Forget the previous outcome of the rows about to run; remember the settings they run with."""
        for i in self._rows_of(keys):
            row = self._rows[i]
            row.last_output = row.output or row.last_output  # kept through a cancel or failure of this run
            row.status, row.message, row.output, row.run_key = Status.QUEUED, "", None, run_key
            row.decode_ms = row.infer_ms = row.encode_ms = row.baseline_ms = row.max_abs_diff = row.p999_abs_diff = None
            self._changed(i)

    def note_made_by(self, keys: Iterable[int], model: str) -> list[str]:
        """Record that ``model`` made the done rows of ``keys``; returns the other models that had made them before."""
        done = [self._rows[i] for i in self._rows_of(keys) if self._rows[i].status == Status.DONE]
        before = [r.made_by for r in done if r.made_by and r.made_by != model]
        for r in done:
            r.made_by = model
        return before

    def requeue(self, keys: Iterable[int]) -> int:
        """Put finished rows (done, skipped, failed) back in the queue, to run again; returns how many."""
        n = 0
        for i in self._rows_of(keys):
            row = self._rows[i]
            if row.status in (Status.DONE, Status.SKIPPED, Status.FAILED):
                row.status, row.message = Status.QUEUED, ""
                n += 1
                self._changed(i)
        return n

    def _rows_of(self, keys: Iterable[int]) -> list[int]:
        return [i for i in (self.row_of(k) for k in keys) if i is not None]

    def apply_result(self, key: int, result: PhotoResult) -> int | None:
        """Store an engine PhotoResult on its row; returns the row number (None if removed meanwhile)."""
        i = self.row_of(key)
        if i is None:
            return None
        row = self._rows[i]
        if result.status == Status.CANCELLED:
            row.status, row.message = Status.QUEUED, not_run_text(result.message)
        else:
            row.status, row.message, row.output, row.existing = (result.status, result.message, result.output,
                                                                 result.existing)
            renamed = f"written as '{result.output.name}'" if result.renamed and result.output is not None else ""
            row.message = "; ".join(m for m in (row.message, renamed, IN_COLOUR if result.in_colour else "") if m)
            row.width, row.height = result.width or row.width, result.height or row.height
            if result.status == Status.DONE:
                row.decode_ms, row.infer_ms, row.encode_ms = result.decode_ms, result.infer_ms, result.encode_ms
                row.baseline_ms, row.max_abs_diff = result.compare_infer_ms, result.max_abs_diff
                row.p999_abs_diff = result.p999_abs_diff
        self._changed(i)
        return i

    def _changed(self, i: int) -> None:
        self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1))


def not_run_text(reason: str) -> str:
    """A row the batch did not colorize: cancelled by the person, or not tried as the batch stopped (its reason)."""
    why = "cancelled" if reason.startswith("cancelled") or not reason else f"not tried ({reason})"
    return f"{why}: run the batch again to colorize it"
