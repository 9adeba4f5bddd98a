"""The colour-strength slider applies to what is exported after it is set, and is remembered."""

from __future__ import annotations

import cv2
import numpy as np
from PySide6.QtCore import QSettings

from engine.color import colourfulness
from gui.model import settings as app_settings

TIMEOUT_MS = 60_000


def _run(qtbot, window, action: str = "start"):
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        window.actions_by_name[action].trigger()
    return blocker.args[0]


def _written(window) -> list[np.ndarray]:
    return [cv2.cvtColor(cv2.imread(str(r.output)), cv2.COLOR_BGR2RGB) for r in window.queue.rows()]


def _greyness(rgb: np.ndarray) -> int:
    x = rgb.astype(np.int16)
    return max(int(np.abs(x[..., 0] - x[..., 1]).max()), int(np.abs(x[..., 1] - x[..., 2]).max()))


def test_the_strength_set_on_the_slider_is_the_strength_exported(qtbot, make_window, backend, grey_photos):
    window = make_window(backend)
    window.queue_presenter.add_paths(grey_photos(2, size=(64, 96)))
    _run(qtbot, window)
    own = _written(window)
    assert window.controller.request.export.strength == 1.0
    assert all(_greyness(rgb) > 1 for rgb in own)  # the (untrained) model colours something

    window.preview.bar.strength.setValue(0)
    _run(qtbot, window, "run_again")
    assert window.controller.request.export.strength == 0.0
    assert all(_greyness(rgb) <= 1 for rgb in _written(window))

    window.preview.bar.strength.setValue(200)
    _run(qtbot, window, "run_again")
    for before, after in zip(own, _written(window), strict=True):
        assert colourfulness(after) > 1.3 * colourfulness(before)


def test_the_strength_survives_a_restart_of_the_window(qtbot, make_window, backend):
    window = make_window(backend)
    window.preview.bar.strength.setValue(150)
    window.close()
    assert app_settings.load(QSettings()).export.strength == 1.5
    again = make_window(backend)
    assert again.preview.bar.strength.value() == 150
    assert again.prefs.current().export.strength == 1.5


def test_a_hand_edited_strength_out_of_range_falls_back_to_the_models_own():
    qs = QSettings()
    for bad in ("7", "-1", "nan", "strong"):
        qs.setValue("export/strength", bad)
        assert app_settings.load(qs).export.strength == 1.0
