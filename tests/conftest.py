"""Fixtures for the GUI tests (tests/test_gui_*.py). Engine tests use none of these: the autouse
fixtures do nothing for them, and Qt is imported only inside fixtures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _is_gui_test(request: pytest.FixtureRequest) -> bool:
    return request.node.path.name.startswith("test_gui_")


@pytest.fixture(autouse=True)
def _isolated_qsettings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every GUI test reads and writes its own INI settings, never the user's."""
    if not _is_gui_test(request):
        yield
        return
    from PySide6.QtCore import QSettings

    app = request.getfixturevalue("qapp")
    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))
    app.setOrganizationName("ColorizerTests")
    app.setApplicationName("ColorizerTests")
    yield


@pytest.fixture(autouse=True)
def _isolated_log_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test writes into the user's log folder (``gui.logfile`` reads COLORIZER_LOG_DIR)."""
    monkeypatch.setenv("COLORIZER_LOG_DIR", str(tmp_path_factory.mktemp("logs")))


@pytest.fixture(autouse=True)
def _isolated_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test writes into the user's cache folder (the OpenVINO engine's conversions read COLORIZER_CACHE_DIR)."""
    monkeypatch.setenv("COLORIZER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _no_dangling_qthreads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a GUI test that leaves a QThread running (as napari does)."""
    if not _is_gui_test(request):
        yield
        return
    from PySide6.QtCore import QThread

    started: list[Any] = []
    original = QThread.start

    def start(self: Any, *args: Any) -> None:
        started.append(self)
        original(self, *args)

    monkeypatch.setattr(QThread, "start", start)
    yield
    running = []
    for thread in started:
        try:
            if thread.isRunning():
                running.append(thread.objectName() or repr(thread))
        except RuntimeError:  # the C++ object is gone, so the thread ended
            pass
    if running:
        for thread in started:
            try:
                thread.quit()
                thread.wait(5000)
            except RuntimeError:
                pass
        pytest.fail(f"test left QThreads running: {running}")


def write_grey(path: Path, size: tuple[int, int] = (40, 60), seed: int = 0) -> Path:
    """A small grey photo: a gradient with noise, so it is not flat."""
    import cv2
    import numpy as np

    h, w = size
    rng = np.random.default_rng(seed)
    img = (np.linspace(30, 220, w)[None, :] + rng.normal(0, 12, (h, w))).clip(0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), img)
    return path


@pytest.fixture
def write_photo() -> Callable[..., Path]:
    """write(path, size=(40, 60), seed=0) -> path of a small grey photo written there."""
    return write_grey


@pytest.fixture
def grey_photos(tmp_path: Path) -> Callable[..., list[Path]]:
    """make(n, folder="in", ext=".png") -> n small grey photos."""

    def make(n: int, folder: str = "in", ext: str = ".png", size: tuple[int, int] = (40, 60)) -> list[Path]:
        return [write_grey(tmp_path / folder / f"photo{i:02d}{ext}", size, seed=i) for i in range(n)]

    return make


@pytest.fixture(scope="session")
def _gentle_torch() -> None:
    """One thread for torch: the tests share this machine with other work."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture
def backend(_gentle_torch: None) -> Any:
    """The real engine bridge with an untrained model (the trained weights may not exist)."""
    from gui.bridge.untrained import untrained_factory
    from gui.bridge.worker import Backend

    return Backend(factory=untrained_factory)


@pytest.fixture
def slow_backend(_gentle_torch: None) -> Any:
    """Like ``backend``, but each model call takes at least 0.15 s, so a batch can be caught mid-way."""
    from gui.bridge.untrained import untrained_factory
    from gui.bridge.worker import Backend

    def factory(settings: Any) -> Any:
        colorizer = untrained_factory(settings)
        infer = colorizer.infer

        def slow_infer(canvas: Any, *args: Any, **kwargs: Any) -> Any:
            time.sleep(0.15)
            return infer(canvas, *args, **kwargs)

        colorizer.infer = slow_infer
        return colorizer

    return Backend(factory=factory)


@pytest.fixture
def before_after(qtbot: Any) -> Any:
    """A shown, exposed 900 x 500 BeforeAfterView with no photo yet."""
    from gui.views.preview import BeforeAfterView

    view = BeforeAfterView()
    view.resize(900, 500)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    return view


@pytest.fixture
def make_window(qtbot: Any, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """make(backend, size=64, batch_size=2, **choice) -> a shown MainWindow exporting to tmp_path/out."""
    from PySide6.QtCore import QSettings

    from engine.options import ColorizeSettings
    from gui.main_window import MainWindow

    windows: list[Any] = []

    def make(backend: Any, size: int = 64, batch_size: int = 2, samples_dir: Path | None = None,
             **choice: Any) -> Any:
        window = MainWindow(backend, QSettings(), samples_dir=samples_dir)
        window.ask_quit = lambda *_: True  # closed mid-batch at the end of a test: no question
        window.engine_panel.set_choice(ColorizeSettings(size=size, batch_size=batch_size, **choice))
        window.prefs.set_output_dir(tmp_path / "out")
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.close()  # cancels and joins a running batch
