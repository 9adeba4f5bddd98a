"""Compare mode explains itself: what is compared with what, the speed-up over the same photos, the
difference as max and 99.9th percentile with its units and the expected range, and "model busy" without
the baseline's time.
"""

from __future__ import annotations

import pytest

from engine.options import AGREEMENT, BatchSummary
from gui.model.queue_model import COL_DIFF, COLUMNS
from gui.views.comparison import difference_tooltip, expected_range

TIMEOUT_MS = 60_000


def _run(qtbot, window):
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    return blocker.args[0]


def _compared_batch(qtbot, make_window, backend, photos):
    """A finished batch of ``photos`` with Compare ticked, at fp32 ("auto" is bf16 on some CPUs), batch size 2."""
    window = make_window(backend, batch_size=2, precision="fp32")
    window.engine_panel.compare.setChecked(True)
    window.queue_presenter.add_paths(photos)
    return window, _run(qtbot, window)


def test_the_summary_names_the_engines_precisions_and_batch_size_compared(qtbot, make_window, backend, grey_photos):
    window, summary = _compared_batch(qtbot, make_window, backend, grey_photos(3))
    assert summary.comparison() == "optimized fp32, batch 2 vs baseline fp32, batch 2"
    assert window.summary.fields["compared"].text() == summary.comparison()


def test_the_speedup_is_total_baseline_time_over_total_engine_time_on_the_same_photos(qtbot, make_window, backend,
                                                                                       grey_photos):
    window, summary = _compared_batch(qtbot, make_window, backend, grey_photos(5))
    done = [r for r in summary.results if r.status == "done"]
    assert summary.compare_speedup == pytest.approx(sum(r.compare_infer_ms for r in done)
                                                    / sum(r.infer_ms for r in done))
    assert f"{summary.compare_speedup:.2f}×" == window.summary.fields["speedup"].text()
    assert "over the same photos" in window.summary.fields["speedup"].toolTip()
    assert "Speed-up" not in COLUMNS  # no per-row column repeating each batch's figure


def test_photos_not_compared_do_not_count_towards_the_speedup():
    s = BatchSummary(total=4, infer_s=3.0, compare_infer_s=4.0, compared_infer_s=1.0)  # 2 s ran uncompared
    assert s.compare_speedup == pytest.approx(4.0)


def test_the_difference_shows_max_and_p999_with_units_and_the_expected_range(qtbot, make_window, backend,
                                                                             grey_photos):
    window, summary = _compared_batch(qtbot, make_window, backend, grey_photos(3))
    assert summary.p999_abs_diff is not None and summary.max_abs_diff is not None
    assert summary.p999_abs_diff <= summary.max_abs_diff
    diff = window.summary.fields["diff"]
    assert f"max {summary.max_abs_diff:.3g}" in diff.text() and f"p99.9 {summary.p999_abs_diff:.3g}" in diff.text()
    tip = diff.toolTip()
    assert "Lab" in tip and "-110..110" in tip and "invisible" in tip
    assert f"Expected for fp32: 99.9% of values within {AGREEMENT['fp32'].p999:.3g}" in tip
    rows = window.queue.rows()
    for i, row in enumerate(rows):  # per photo: its own figures, explained in the tooltip
        assert row.max_abs_diff is not None and row.p999_abs_diff is not None
        assert window.queue.data(window.queue.index(i, COL_DIFF)) == f"{row.max_abs_diff:.3g}"
    assert summary.max_abs_diff == pytest.approx(max(r.max_abs_diff for r in rows))


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_each_precision_has_its_expected_range_in_the_tooltip(precision):
    tip = difference_tooltip(BatchSummary(total=1, precision=precision))
    assert expected_range(precision) in tip and f"{AGREEMENT[precision].max_abs:.3g}" in tip


def test_model_busy_leaves_out_the_baseline_time_and_the_time_paused():
    s = BatchSummary(total=8, done=8, wall_s=10.0, paused_s=2.0, infer_s=3.0, compare_infer_s=5.0)
    assert s.model_busy_share == pytest.approx(3.0 / (10.0 - 2.0 - 5.0))
    assert s.photos_per_s == pytest.approx(8 / 8.0)


def test_model_busy_in_the_window_is_the_engines_share_without_the_baseline(qtbot, make_window, backend,
                                                                           grey_photos):
    window, summary = _compared_batch(qtbot, make_window, backend, grey_photos(4))
    own = summary.wall_s - summary.paused_s - summary.compare_infer_s
    assert summary.compare_infer_s > 0 and summary.model_busy_share == pytest.approx(min(1.0, summary.infer_s / own))
    assert window.summary.fields["busy"].text() == f"{100 * summary.model_busy_share:.0f}%"
    # the mean per photo is the batch's time, the baseline's run in it: said, since each row's Time is not
    assert window.summary.fields["mean"].text() == f"{summary.mean_ms_per_photo:.0f} ms (with the baseline's run)"


def test_the_summary_fits_a_narrow_dock_with_a_long_outcome(qtbot):
    from gui.views.charts import SummaryPanel

    panel = SummaryPanel()
    qtbot.addWidget(panel)
    s = BatchSummary(total=31, done=29, failed=1, cancelled=True, wall_s=10.0, infer_s=3.0)
    panel.show_summary(s)
    assert panel.fields["photos"].text() == "29 done of 31, 1 failed, cancelled"
    assert panel.fields["mean"].text() == f"{s.mean_ms_per_photo:.0f} ms"  # no baseline: the figure alone
    panel.resize(240, 400)
    panel.show()
    assert panel.minimumSizeHint().width() <= 240  # the long lines wrap instead of widening (or clipping) the dock
    assert all(label.width() <= panel.width() for label in panel.fields.values())
