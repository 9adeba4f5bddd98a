""""Auto" in the window: the default model, chosen by the look of each folder's photos; a preview is a batch of one."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from helpers import SAMPLES, old_scan, random_model
from PySide6.QtCore import QSettings, Qt

from engine.batch.model_choice import look_of_lightness
from engine.color import lightness
from engine.colorizer import Colorizer
from engine.imageio import decode
from engine.model import with_hint_channels
from engine.named_models import BUNDLED, OLD_PRINTS, SHIPPED
from engine.options import ColorizeSettings
from engine.training.print_gate import grey_copy
from gui.bridge import worker
from gui.bridge.worker import Recolourer
from gui.main_window import MainWindow

TIMEOUT_MS = 60_000


def _photos(folder, make):
    folder.mkdir()
    paths = []
    for i, sample in enumerate(SAMPLES[:3]):
        paths.append(folder / f"{folder.name}-{sample.stem}.png")  # outputs of two folders do not meet
        cv2.imwrite(str(paths[-1]), make(decode(sample).pixels, i)[..., ::-1])
    return paths


def test_a_first_start_chooses_auto(qtbot, backend):
    window = MainWindow(backend, QSettings())
    qtbot.addWidget(window)
    assert window.engine_panel.model_name() == "auto"
    choice = window.engine_panel.choice()
    assert choice.by_look and choice.weights is None
    window.close()


def test_a_queue_of_old_scans_goes_to_old_prints_and_running_part_of_it_again_keeps_that(qtbot, make_window, backend,
                                                                                     tmp_path):
    window = make_window(backend, by_look=True)
    assert window.engine_panel.model_name() == "auto"
    window.queue_presenter.add_paths(_photos(tmp_path / "old", old_scan))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    assert window.controller.request.model.by_look  # chosen on the worker, from the photos themselves
    model = window.summary.fields["model"].text()
    assert model.startswith("Old prints, chosen by the photos' look: 3 of the 3"), model

    assert window.hint_editor.recolourer._auto == (BUNDLED[OLD_PRINTS], {tmp_path / "old": BUNDLED[OLD_PRINTS]})

    window.queue_presenter.add_paths(_photos(tmp_path / "clean", lambda photo, _: grey_copy(photo)))
    clean = {r.key for r in window.queue.rows() if r.path.parent.name == "clean"}
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch(only=clean)  # each folder of the queue judged by its own look
    model = window.summary.fields["model"].text()
    assert model == "Shipped, chosen by the photos' look: 0 of the 3 looked at seem to be scans of old prints"
    assert {r.path.parent.name: r.made_by for r in window.queue.rows()} == {"old": OLD_PRINTS, "clean": SHIPPED}
    folders = {tmp_path / "old": BUNDLED[OLD_PRINTS], tmp_path / "clean": None}  # previews follow each folder's model
    assert window.hint_editor.recolourer._auto == (None, folders)
    assert "made before by" not in window.status_label.text()  # nothing it had made came from another model

    window.queue.requeue([r.key for r in window.queue.rows()])
    during: list[str] = []  # the Model row once the run has started: said while it goes on, not only after
    window.controller.started.connect(lambda _: during.append(window.summary.fields["model"].text()))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()  # both folders in one run: each named with its look, as the window names
    assert window.summary.fields["model"].text() == (
        "Auto, chosen folder by folder by the photos' look: Old prints for 'old' (3 photos; 3 of the 3 looked at "
        "read as old prints); Shipped for 'clean' (3 photos; 0 of the 3 looked at read as old prints)")
    assert during == [window.summary.fields["model"].text()]
    assert "made before by" not in window.status_label.text()


def test_photos_run_again_after_the_queue_grew_are_said_to_come_from_the_other_model(qtbot, make_window, backend,
                                                                                    tmp_path):
    window = make_window(backend, by_look=True)
    window.queue_presenter.add_paths(_photos(tmp_path / "old", old_scan))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()  # old prints, by the 3 of 3
    old = {r.key for r in window.queue.rows()}
    clean = []  # clean photos put in the same folder: now 3 old of 7, its look calls for the shipped model
    for i, sample in enumerate(SAMPLES[:4]):
        clean.append(tmp_path / "old" / f"clean-{i}.png")
        cv2.imwrite(str(clean[-1]), grey_copy(decode(sample).pixels))
    window.queue_presenter.add_paths(clean)
    window.queue.requeue(old)
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch(only=old)
    text = window.status_label.text()
    assert "3 photos made before by Old prints came from Shipped this time" in text, text


def test_a_clean_queue_goes_to_the_shipped_model(qtbot, make_window, backend, tmp_path):
    window = make_window(backend, by_look=True)
    window.queue_presenter.add_paths(_photos(tmp_path / "clean", lambda photo, _: grey_copy(photo)))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS):
        assert window.batch.start_batch()
    assert window.summary.fields["model"].text().startswith("Shipped, chosen by the photos' look: 0 of the 3")


def test_a_preview_with_auto_is_coloured_by_the_model_its_folders_look_calls_for(qtbot, tmp_path, monkeypatch):
    used: list[Path | None] = []  # the weights of each colorizer that coloured a preview (they are cached)
    model = with_hint_channels(random_model(), 3).eval()  # a model that takes hints answers with colour

    def factory(settings: ColorizeSettings):
        assert not settings.by_look
        c = Colorizer.create(settings, model=model)
        predict = c.predict
        c.predict = lambda *a, **k: used.append(settings.weights) or predict(*a, **k)
        return c

    read: list[Path] = []  # the files handed to the look, and at most how many of them it reads
    samples: list[int] = []
    look = worker.look_of_batch

    def spied_look(paths, sample):
        read.extend(paths)
        samples.append(sample)
        return look(paths, sample)

    monkeypatch.setattr(worker, "look_of_batch", spied_look)
    recolourer = Recolourer(factory)
    recolourer.stop()  # its thread is not needed: the requests are served here, one by one
    answers = []
    recolourer.recoloured.connect(lambda key, hints, settings, ab: answers.append(settings),
                                  Qt.ConnectionType.DirectConnection)  # its own thread is stopped
    auto = ColorizeSettings(size=64, by_look=True)
    photo = decode(SAMPLES[0]).pixels
    old_L = np.ascontiguousarray(lightness(old_scan(photo, 0)))
    clean_L = np.ascontiguousarray(lightness(grey_copy(photo)))
    for L, weights in ((old_L, BUNDLED[OLD_PRINTS]), (clean_L, None)):  # no file: its lightness is read
        recolourer._serve("colour", 1, (L, None, (), auto))
        assert used[-1] == weights
        assert answers[-1] == auto  # answered for what was asked: the presenter matches it to its settings
    box, modern = tmp_path / "box", tmp_path / "modern"
    box.mkdir(), modern.mkdir()
    toned = box / "toned.jpg"  # a sepia scan whose lightness alone reads clean: its file shows the tone
    cv2.imwrite(str(toned), old_scan(decode(SAMPLES[3]).pixels, 0)[..., ::-1])
    cv2.imwrite(str(box / "scan.jpg"), old_scan(decode(SAMPLES[1]).pixels, 1)[..., ::-1])
    toned_L = np.ascontiguousarray(lightness(decode(toned).pixels))
    assert look_of_lightness(toned_L).model == SHIPPED  # the case the files are read for
    odd = box / "odd.png"  # a clean photo among the scans: a run of the box gives it old-prints, so its preview too
    cv2.imwrite(str(odd), grey_copy(photo))
    clean = modern / "clean.png"
    cv2.imwrite(str(clean), grey_copy(photo))
    for path, L, weights in ((toned, toned_L, BUNDLED[OLD_PRINTS]), (clean, clean_L, None), (odd, clean_L,
                             BUNDLED[OLD_PRINTS]), (toned, toned_L, BUNDLED[OLD_PRINTS])):
        recolourer._serve("colour", 2, (L, path, (), auto))
        assert used[-1] == weights, path  # the photo's folder read as a run of it would read it
    assert read == [box / "odd.png", box / "scan.jpg", toned, clean]  # each folder read once
    assert samples == [worker.PREVIEW_SAMPLE] * 2  # a few of a folder's photos: a first hint does not wait long
    recolourer._serve("warm", -1, (auto,))  # no photo yet: loads the shipped model (the factory refuses by_look)
    recolourer.follow(BUNDLED[OLD_PRINTS])  # a batch chose old-prints for the queue: previews follow it
    recolourer._serve("colour", 1, (clean_L, clean, (), auto))
    assert used[-1] == BUNDLED[OLD_PRINTS]
    recolourer.follow(None, {modern: OLD_PRINTS})  # chosen folder by folder: old-prints for this one
    recolourer._serve("colour", 1, (clean_L, clean, (), auto))
    assert used[-1] == BUNDLED[OLD_PRINTS]
    recolourer._serve("colour", 1, (clean_L, tmp_path.parent / "elsewhere.png", (), auto))
    assert used[-1] is None  # a photo of another folder: the model most of the batch took


def _worker_run(tmp_path, paths, cancel=False, compare=False, coloured=None):
    from engine.options import ExportOptions
    from gui.bridge.worker import BatchWorker
    from gui.model.request import BatchRequest, QueuedPhoto

    built: list[ColorizeSettings] = []

    def factory(settings):
        built.append(settings)
        c = Colorizer.create(settings, model=random_model())
        infer_photos = c.infer_photos
        if coloured is not None:  # each model call: the weights and how many photos

            def counted_call(items, *args):
                coloured.append((settings.weights, len(items)))
                return infer_photos(items, *args)

            c.infer_photos = counted_call
        return c

    request = BatchRequest(tuple(QueuedPhoto(100 + i, p, p.parent) for i, p in enumerate(paths)),  # keys: not indices
                           ColorizeSettings(size=64, by_look=True), ExportOptions(tmp_path / "out"), compare=compare)
    worker = BatchWorker(request, factory)
    summaries = []
    worker.finished.connect(summaries.append, Qt.ConnectionType.DirectConnection)
    if cancel:
        worker.cancel()
    worker.run()
    return summaries[0], built


def test_a_cancel_during_the_look_loads_no_model_and_chooses_nothing(tmp_path):
    summary, built = _worker_run(tmp_path, _photos(tmp_path / "old", old_scan), cancel=True)
    assert summary.cancelled and built == [] and summary.chosen_model == ""


def test_with_no_photo_readable_the_shipped_model_runs_and_nothing_is_said_to_be_chosen(tmp_path):
    (tmp_path / "in").mkdir()
    broken = tmp_path / "in" / "broken.jpg"
    broken.write_bytes(b"not a photo")
    summary, built = _worker_run(tmp_path, [broken])
    assert built[0].weights is None and not built[0].by_look
    assert summary.failed == 1 and summary.chosen_model == ""


def test_a_queue_of_several_folders_colours_each_with_the_model_its_look_calls_for(tmp_path):
    old = _photos(tmp_path / "old", old_scan)
    clean = [*_photos(tmp_path / "clean", lambda photo, _: grey_copy(photo)),
             *_photos(tmp_path / "clean-2", lambda photo, _: grey_copy(photo))]
    coloured: list[tuple[Path | None, int]] = []
    summary, built = _worker_run(tmp_path, [*clean[:3], *old, *clean[3:]], coloured=coloured)
    assert summary.done == 9 and summary.chosen_model == SHIPPED  # the model most photos take
    assert summary.folder_models == {tmp_path / "clean": SHIPPED, tmp_path / "old": OLD_PRINTS,
                                     tmp_path / "clean-2": SHIPPED}
    assert {s.weights for s in built} == {None, BUNDLED[OLD_PRINTS]}
    by_weights: dict[Path | None, int] = {}
    for weights, n in coloured:
        by_weights[weights] = by_weights.get(weights, 0) + n
    assert by_weights == {None: 6, BUNDLED[OLD_PRINTS]: 3}

    summary, built = _worker_run(tmp_path, [*clean[:3], *old, *clean[3:]], compare=True)  # a race: one model
    assert "Shipped for every photo, as a comparison runs one model" in summary.model_choice
    assert summary.folder_models[tmp_path / "old"] == OLD_PRINTS  # previews still follow each folder's own model
    assert {s.weights for s in built if s.engine != "baseline"} == {None}
