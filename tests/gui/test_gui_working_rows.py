"""Rows show "working" exactly while the engine works on them: from its image_started to its result."""

from __future__ import annotations

TIMEOUT_MS = 60_000


def test_rows_are_working_from_the_engines_start_to_their_result(qtbot, make_window, slow_backend, grey_photos):
    window = make_window(slow_backend, batch_size=2)
    window.queue_presenter.add_paths(grey_photos(5))
    seen = []

    def statuses() -> list[str]:
        return [r.status for r in window.queue.rows()]

    # Connected after the window's own slots, so each sees the queue as the window left it.
    window.controller.image_started.connect(lambda i: seen.append(("started", i, statuses())))
    window.controller.image_done.connect(lambda r: seen.append(("done", r.index, statuses())))
    with qtbot.waitSignal(window.controller.finished, timeout=TIMEOUT_MS) as blocker:
        assert window.batch.start_batch()
    assert blocker.args[0].done == 5
    assert [(kind, i) for kind, i, _ in seen if kind == "started"] == [("started", i) for i in range(5)]
    started: set[int] = set()
    finished: set[int] = set()
    for kind, i, rows in seen:
        (started if kind == "started" else finished).add(i)
        # Working: taken up by the engine and not reported yet; nothing guessed ahead of the engine.
        assert {j for j, s in enumerate(rows) if s == "working"} == started - finished, (kind, i, rows)
    assert "working" not in statuses()
