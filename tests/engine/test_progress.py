"""The one progress bar of ``colorize`` and ``train``: in place on a terminal, plain lines in a log."""

from __future__ import annotations

import io

from engine.progress import ProgressBar, format_eta


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rate_and_eta_count_only_this_runs_steps_and_a_budget_caps_the_eta():
    bar = ProgressBar(100, unit="it", stream=io.StringIO())
    bar.count = 50
    assert "50/100 5.00 it/s ETA 0:10" in bar.line(10.0)
    assert "ETA 0:03" in bar.line(10.0, time_left=3.0)
    resumed = ProgressBar(100, unit="it", first=40, stream=io.StringIO())
    resumed.count = 50
    assert "50/100 1.00 it/s ETA 0:50" in resumed.line(10.0)
    fresh = ProgressBar(10, unit="photos", stream=io.StringIO())
    assert "0/10 0.00 photos/s ETA --:--" in fresh.line(0.0)


def test_skipped_steps_move_the_bar_but_not_the_rate():
    bar = ProgressBar(1492, unit="photos", stream=io.StringIO())
    bar.update(725, skipped=725)  # --skip-existing: 725 outputs exist
    assert "725/1492 (725 skipped) 0.00 photos/s ETA --:--" in bar.line(0.5)
    bar.update(735, skipped=725)  # then 10 photos colorized in 5 s: 2 photos/s, 757 left
    assert "735/1492 (725 skipped) 2.00 photos/s ETA 6:19" in bar.line(5.0)


def test_eta_reads_as_minutes_or_hours():
    assert (format_eta(None), format_eta(9.6), format_eta(125), format_eta(3725)) == ("--:--", "0:10", "2:05",
                                                                                     "1:02:05")


def test_outside_a_terminal_colorize_is_silent_and_train_writes_a_line_every_n_steps():
    quiet = io.StringIO()
    bar = ProgressBar(30, stream=quiet)
    for i in range(1, 31):
        bar.update(i, "photo.png")
    bar.close()
    assert quiet.getvalue() == ""

    log = io.StringIO()
    bar = ProgressBar(60, every=25, stream=log)
    for i in range(1, 61):
        bar.update(i, "loss 0.5")
    lines = log.getvalue().splitlines()
    assert [ln.split("] ")[1].split()[0] for ln in lines] == ["25/60", "50/60", "60/60"]
    assert "\r" not in log.getvalue() and all(ln.endswith("loss 0.5") for ln in lines)


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_cleared_or_kept():
    tty = Terminal()
    bar = ProgressBar(4, stream=tty)
    bar.update(1, "a-long-photo-name.png")
    bar.update(2, "b.png")
    assert tty.getvalue().count("\r") == 2 and "\n" not in tty.getvalue()
    drawn = tty.getvalue().split("\r")[-1]
    assert len(drawn) == len(tty.getvalue().split("\r")[1])  # padded over the longer line before
    bar.close()
    assert tty.getvalue().endswith("\r") and tty.getvalue().split("\r")[-2].strip() == ""
    kept = Terminal()
    bar = ProgressBar(4, stream=kept)
    bar.update(4)
    bar.close(keep=True)
    assert kept.getvalue().startswith("\r[") and "4/4" in kept.getvalue() and kept.getvalue().endswith("\n")
