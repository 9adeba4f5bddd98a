"""A hint ring on its way across the preview: the colour follows it before the release, without an Undo step or a
write until then (the release is ``HintEditor.move``). A part of ``HintEditor``, which owns the rings, the colour
cache and the model's worker; requests pile up faster than the model answers, and the worker keeps the newest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from engine.options import ColorizeSettings
from gui.model.hint_store import Hints
from gui.views.hint_rings import Ring

if TYPE_CHECKING:
    from gui.presenters.hints import HintEditor

Asked = tuple[int, Hints, ColorizeSettings]  # (queue key, hints, settings): what a colour was asked for


class HintDrag:
    """What the drag asked for last (shown when it comes), every place it asked for (answers for places it has left
    are dropped, not cached) and the one answer of its own kept in the cache (the one shown).
    """

    def __init__(self, editor: HintEditor) -> None:
        self.editor = editor
        self.want: Asked | None = None
        self.asked: set[Asked] = set()
        self.kept: Asked | None = None

    def step(self, index: int, x: float, y: float) -> None:
        e = self.editor
        hints, L, key = list(e.hints()), e.preview.grey(), e.key
        held = [r for r in e._rings if r.index == index and r.held]
        if not held or not 0 <= index < len(hints) or L is None or key is None or e.recolourer is None:
            return  # a step queued before a release, or before another photo came on show
        if self.want is None:  # a new drag: the last one's places are forgotten
            self.asked.clear()
        hints[index] = replace(hints[index], x=min(max(x, 0.0), 1.0), y=min(max(y, 0.0), 1.0))
        for ring in e._rings:  # the same hint on the other side follows too
            if ring.index == index and not ring.held:
                ring.setPos(held[0].pos())
        want = self.want = (key, tuple(hints), e.settings())
        cached = e._results.get(want)
        if cached is not None:
            e.preview.set_colour(cached)
        else:
            self.asked.add(want)
            e.recolourer.request(key, L, want[1], want[2], e.path)

    def landed(self) -> None:
        """Let go elsewhere (``HintEditor.move``): its last answer stays in the cache as any other, for Undo."""
        self.want, self.kept = None, None

    def back(self, _index: int = 0) -> None:
        """Let go where it began: nothing to keep; the colour of the hints as they are, which the drag's requests
        may have displaced in the model's queue.
        """
        self.want = None
        for ring in self.editor._rings:
            ring.setPos(ring.hint_pos())
        self.editor.recolour()

    def cancel(self, held: list[Ring]) -> None:
        """Undo or Escape mid-drag: the rings let go (the mouse's release then neither moves nor calls back)."""
        for ring in held:
            ring.held = False
            ring.ungrabMouse()
        self.back()

    def answer(self, asked: Asked, ab: np.ndarray) -> bool:
        """Whether the model's answer was the drag's: shown if it is for where the hint is now, and only the newest
        kept, so a drag does not push Undo's colours out of the cache; for a place the drag has left, dropped.
        """
        if asked not in self.asked:
            return False
        self.asked.discard(asked)
        if asked != self.want:
            return True
        if self.kept is not None:
            self.editor._results.pop(self.kept, None)
        self.kept = asked
        self.editor._keep(*asked, ab)
        self.editor.preview.set_colour(ab)
        return True
