"""Settings persistence, options this machine cannot run, the About box, the live utilization plot."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

from engine.options import ColorizeSettings, ExportOptions
from gui.main_window import MainWindow
from gui.model import settings as app_settings
from gui.views.engine_panel import OPENVINO_CPU, EnginePanel, item_enabled
from gui.views.help_dialogs import about_html


def test_settings_round_trip_through_qsettings(qtbot, backend, tmp_path):
    window = MainWindow(backend, QSettings())
    qtbot.addWidget(window)
    model = ColorizeSettings(engine="baseline", device="cpu", precision="fp32", batch_size=7, size=320)
    export = ExportOptions(output_dir=tmp_path / "colour", format="jpg", jpeg_quality=71, mirror_subfolders=False,
                          name_pattern="{index}-{stem}-colour", if_exists="skip", keep_metadata=False,
                          colour_inputs="skip")
    window.engine_panel.set_choice(model)
    window.engine_panel.compare.setChecked(True)
    window.export_panel.set_choice(export)
    window.preview.set_mode("wipe")
    window.close()

    again = MainWindow(backend, QSettings())
    qtbot.addWidget(again)
    assert again.engine_panel.choice() == model
    assert again.export_panel.choice() == export
    assert again.engine_panel.compare.isChecked()
    assert again.preview.mode == "wipe" and again.actions_by_name["wipe"].isChecked()
    # ...and it was the test's own settings file, not the user's.
    assert Path(QSettings().fileName()).parent.parent.name.startswith("qsettings")
    assert not str(Path(QSettings().fileName())).startswith(str(Path.home()))


def test_window_geometry_and_splitter_positions_persist(qtbot, backend):
    window = MainWindow(backend, QSettings())
    qtbot.addWidget(window)
    window.resize(760, 560)  # inside the offscreen platform's 800 x 800 screen
    window.show()
    qtbot.waitExposed(window)
    window.splitters["central"].setSizes([150, 250])
    sizes = {name: splitter.sizes() for name, splitter in window.splitters.items()}
    window.close()

    again = MainWindow(backend, QSettings())
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    assert again.size() == window.size()
    assert {name: splitter.sizes() for name, splitter in again.splitters.items()} == sizes
    assert sizes["central"][0] < sizes["central"][1]  # really moved from the default (queue smaller)


def test_damaged_settings_fall_back_to_defaults():
    qs = QSettings()
    for key, value in {"engine/batch_size": "lots", "engine/size": 5, "engine/engine": "quantum",
                       "export/format": "gif", "export/mirror_subfolders": "perhaps",
                       "export/jpeg_quality": 400}.items():
        qs.setValue(key, value)
    loaded = app_settings.load(qs)
    defaults = app_settings.AppSettings()
    assert loaded.model == defaults.model
    assert loaded.export.format == "keep" and loaded.export.mirror_subfolders is True
    assert loaded.export.jpeg_quality == 92
    for folders, minutes in (("not json", "soon"), ('["a", 3]', 0), ('{"a": 1}', 10_000), ('[""]', "nan")):
        qs.setValue("teach/folders", folders)
        qs.setValue("teach/minutes", minutes)
        assert app_settings.load_teach(qs) == app_settings.TeachChoices()
    qs.setValue("teach/folders", '["one folder"]')  # a list of one is a list, not a string of letters
    assert app_settings.load_teach(qs).folders == (Path("one folder"),)


def test_options_the_machine_cannot_run_are_disabled_with_the_reason(qtbot):
    options = {"devices": {"auto": None, "cpu": None, "cuda": None}, "auto_device": "cuda",
               "precisions": {"cpu": {"auto": None, "fp32": None, "fp16": "fp16 is for CUDA GPUs",
                                      "bf16": "this CPU has no native bf16"},
                              "cuda": {"auto": None, "fp32": None, "fp16": None,
                                       "bf16": "bf16 needs an Ampere or newer GPU; use fp16"}}}
    panel = EnginePanel(options)
    qtbot.addWidget(panel)
    assert item_enabled(panel.precision, "fp16") and not item_enabled(panel.precision, "bf16")
    bf16 = panel.precision.findData("bf16")
    assert panel.precision.itemData(bf16, 3) == "bf16 needs an Ampere or newer GPU; use fp16"  # ToolTipRole

    panel.precision.setCurrentIndex(panel.precision.findData("fp16"))
    panel.device.setCurrentIndex(panel.device.findData("cpu"))
    assert not item_enabled(panel.precision, "fp16")
    assert panel.precision.currentData() == "auto"  # fp16 cannot run on the CPU: back to automatic

    panel.engine.setCurrentIndex(panel.engine.findData("baseline"))
    assert item_enabled(panel.precision, "fp32")
    assert panel.precision.itemData(panel.precision.findData("bf16"), 3) == "the baseline engine runs fp32 only"


def test_the_openvino_engine_is_offered_where_installed_and_then_runs_on_the_cpu_in_fp32_or_bf16(qtbot):
    gpu_options = {"devices": {"auto": None, "cpu": None, "cuda": None}, "auto_device": "cuda",
                   "precisions": {"cpu": {"auto": None, "fp32": None, "fp16": "fp16 is for CUDA GPUs", "bf16": None},
                                  "cuda": {"auto": None, "fp32": None, "fp16": None, "bf16": None}},
                   "engines": {"optimized": None, "baseline": None, "openvino": None}}
    panel = EnginePanel(gpu_options)
    qtbot.addWidget(panel)
    panel.device.setCurrentIndex(panel.device.findData("cuda"))
    panel.precision.setCurrentIndex(panel.precision.findData("fp16"))
    panel.engine.setCurrentIndex(panel.engine.findData("openvino"))
    assert not item_enabled(panel.device, "cuda") and not item_enabled(panel.precision, "fp16")
    assert panel.device.itemData(panel.device.findData("cuda"), 3) == OPENVINO_CPU  # ToolTipRole
    assert panel.choice().device == "auto" and panel.choice().precision == "auto" and panel.resolved_device() == "cpu"
    panel.engine.setCurrentIndex(panel.engine.findData("optimized"))
    assert item_enabled(panel.device, "cuda")  # back on an engine that runs on the GPU

    missing = {**gpu_options, "engines": {"optimized": None, "baseline": None,
                                          "openvino": "the OpenVINO engine needs the openvino package"}}
    panel = EnginePanel(missing)
    qtbot.addWidget(panel)
    assert not item_enabled(panel.engine, "openvino")
    panel.set_choice(ColorizeSettings(engine="openvino"))  # remembered from a machine that had it
    assert panel.choice().engine == "optimized"


def test_without_cuda_the_gpu_option_is_disabled_and_a_saved_cuda_choice_falls_back(qtbot, backend):
    options = backend.available_options()
    if options["auto_device"] == "cuda":
        pytest.skip("this machine has CUDA")
    panel = EnginePanel(options)
    qtbot.addWidget(panel)
    assert not item_enabled(panel.device, "cuda")
    assert "CUDA" in panel.device.itemData(panel.device.findData("cuda"), 3)
    panel.set_choice(ColorizeSettings(device="cuda", precision="fp16"))
    assert panel.choice().device == "auto" and panel.choice().precision == "auto"


def test_about_box_shows_the_model_card_or_why_there_is_none(backend, tmp_path):
    card = {"name": "CV_UNet colorizer", "steps": 5000, "data": {"train_photos": 900}, "history": list(range(999))}
    text = about_html(card, None)
    assert "CV_UNet colorizer" in text and "5000" in text and "trained on 900 photos" in text
    assert "998" not in text  # a summary, not the whole card

    backend.weights = tmp_path / "missing.pt"
    text = about_html(*backend.model_card())
    assert "No trained model is installed" in text and "missing.pt" in text


def test_live_plot_is_fed_and_labelled_cpu_on_the_cpu(qtbot, make_window, backend):
    window = make_window(backend, device="cpu")
    with qtbot.waitSignal(window.live.sampler.stats, timeout=5_000) as blocker:
        pass
    sample = blocker.args[0]
    assert sample.kind == "cpu"
    qtbot.waitUntil(lambda: window.utilization.sample_count() >= 1, timeout=5_000)
    assert "CPU" in window.utilization.title.text()
    assert "CPU utilization" in window.utilization.busy_plot.getPlotItem().titleLabel.text
    assert "process memory" in window.utilization.memory_plot.getPlotItem().titleLabel.text


def test_main_actions_are_in_the_menus_with_keyboard_shortcuts(make_window, backend):
    window = make_window(backend)
    in_menus = {a.text() for menu in window.menuBar().findChildren(QMenu) for a in menu.actions()}
    for name in ("add_files", "add_folder", "samples", "start", "pause", "cancel", "remove", "clear", "about",
                 "open_output", "wipe"):
        assert window.actions_by_name[name].text() in in_menus, name
    for name in ("add_files", "add_folder", "start", "pause", "cancel", "remove", "zoom_in", "fit"):
        assert not window.actions_by_name[name].shortcut().isEmpty(), name


def test_the_output_folder_dialog_opens_beside_a_folder_not_made_yet_not_in_the_working_folder(
        qtbot, monkeypatch, tmp_path):
    from gui.views.export_panel import ExportPanel

    panel = ExportPanel()
    qtbot.addWidget(panel)
    panel.set_output_dir(tmp_path / "Pictures" / "Colorized")  # a first run's default: not made yet
    (tmp_path / "Pictures").mkdir()
    opened_in = []
    monkeypatch.setattr("gui.views.export_panel.QFileDialog.getExistingDirectory",
                        lambda parent, title, folder: opened_in.append(folder) or "")
    panel.choose_folder()
    assert opened_in == [str(tmp_path / "Pictures")]
