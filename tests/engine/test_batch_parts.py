"""The batch pipeline's parts and their timing: ordered writes under slow disks, cancel and pause
between photos, and the image_started event.

No wall clock: slowness is made with gates (events the test opens) and the assertions are on what
was started, written and reported.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Executor, Future
from dataclasses import replace

import pytest
from helpers import random_model, write_grey

import engine.batch.decode_ahead as decode_ahead
import engine.batch.ordered_writes as ordered_writes
import engine.batch.pipeline as pipeline_module
from engine.batch.inputs import collect_inputs
from engine.batch.ordered_writes import OrderedWrites, WriteOutcome
from engine.batch.pipeline import BatchPipeline, RunControl
from engine.batch.quiet import NoGate
from engine.colorizer import Colorizer
from engine.options import ColorizeSettings, ExportOptions, PhotoResult


@pytest.fixture(scope="module")
def colorizer():
    return Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=3), model=random_model())


def with_batch(c: Colorizer, batch_size: int) -> Colorizer:
    return Colorizer(c.runtime, replace(c.settings, batch_size=batch_size), c.model)


def photos(root, n, size=(40, 48)):
    for i in range(n):
        write_grey(root / f"p{i:02d}.png", size[0], size[1], i)
    return collect_inputs([root])[0]


# -- ordered writes --------------------------------------------------------------------------------------


class FinishesWhenLookedAt(Future):
    """A write that is still running when first looked at, and finishes right after that look.

    This is the old race made deterministic: the pipeline counted the unfinished writes, the writes
    finished, then it asked for the first unfinished one with ``next(...)`` and got StopIteration.
    """

    def __init__(self, work):
        super().__init__()
        self.work = work

    def done(self) -> bool:
        if super().done():
            return True
        self.set_result(self.work())  # finishes between this look and the next
        return False


class WritesFinishingWhenLookedAt(Executor):
    def submit(self, fn, /, *args, **kwargs):
        return FinishesWhenLookedAt(lambda: fn(*args, **kwargs))


def test_writes_finishing_between_two_looks_are_reported_never_raised():
    reported = []
    writes = OrderedWrites(WritesFinishingWhenLookedAt(), lambda r, o: reported.append((r.index, o)),
                           max_waiting=1, max_pixels=10**9)
    for i in range(4):
        writes.add(PhotoResult(i, None, "done", width=10, height=10), lambda i=i: WriteOutcome(float(i)))
    writes.throttle()  # the old throttle_writes raised StopIteration here
    writes.finish()
    assert [i for i, _ in reported] == [0, 1, 2, 3]
    assert [o.ms for _, o in reported] == [0.0, 1.0, 2.0, 3.0]


def test_slow_writes_hold_the_model_back_and_every_photo_is_reported_in_order(colorizer, tmp_path, monkeypatch):
    jobs = photos(tmp_path / "in", 9)
    real_encode = ordered_writes.encode
    written = []

    def slow_encode(final, *a, **kw):
        time.sleep(0.03)  # a slow disk: the model is much faster than the writes (no time is asserted)
        real_encode(final, *a, **kw)
        written.append(final)

    c = with_batch(colorizer, 1)
    real_infer = c.infer_photos
    ahead = []  # at each model call: photos coloured so far minus photos written

    def counting_infer(items):
        ahead.append(len(ahead) - len(written))
        return real_infer(items)

    monkeypatch.setattr(ordered_writes, "encode", slow_encode)
    monkeypatch.setattr(c, "infer_photos", counting_infer)
    results = []
    summary = BatchPipeline(c, ExportOptions(tmp_path / "out"), encode_workers=1).run(jobs, on_result=results.append)
    assert summary.done == 9 and [r.index for r in results] == list(range(9))
    # The model never ran further ahead of the disk than the writes allowed to wait (2 x batch + writers).
    assert max(ahead) <= 2 * 1 + 1
    assert max(ahead) >= 1  # ...and the writes really were the slow part


# -- cancel, pause, image_started ------------------------------------------------------------------------


def test_cancel_drops_queued_decodes_without_running_them(colorizer, tmp_path, monkeypatch):
    jobs = photos(tmp_path / "in", 10)
    real_decode = decode_ahead.decode
    decoded = []
    gate = threading.Event()  # photo 1's decode runs until the test lets it finish

    def slow_decode(path, *a, **kw):
        decoded.append(path.name)
        if path.name == "p01.png":
            gate.wait(10)
        return real_decode(path, *a, **kw)

    monkeypatch.setattr(decode_ahead, "decode", slow_decode)
    # Photo 1's decode waits for this thread here; on the CPU a model call waits for running decodes
    # (quiet.py), so that would hold photo 0's model call: this test is about the queue, not that wait.
    monkeypatch.setattr(pipeline_module, "gate_for", lambda *a, **kw: NoGate())
    control = RunControl()
    results = []

    def on_result(r):
        results.append(r)
        if r.index == 0:
            control.cancel()  # while photo 1 is still decoding and photos 2..4 wait for a decoder
        if r.status == "cancelled":
            gate.set()

    pipeline = BatchPipeline(with_batch(colorizer, 1), ExportOptions(tmp_path / "out"), decode_workers=1)
    summary = pipeline.run(jobs, on_result=on_result, control=control)
    assert summary.cancelled and summary.done == 1
    assert [r.status for r in results] == ["done"] + ["cancelled"] * 9
    assert [r.index for r in results] == list(range(10))
    # Only the decode that was running when cancel came was finished; the queued ones never ran.
    assert decoded == ["p00.png", "p01.png"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["p00.png"]


def test_cancel_from_another_thread_stops_within_one_photo(colorizer, tmp_path, monkeypatch):
    jobs = photos(tmp_path / "in", 8)
    c = with_batch(colorizer, 1)
    real_infer = c.infer_photos
    colored = []
    control = RunControl()

    def infer_then_cancel(items):
        out = real_infer(items)
        colored.append(len(items))
        if len(colored) == 2:  # the GUI's Cancel button, pressed during the second photo's model call
            button = threading.Thread(target=control.cancel)
            button.start()
            button.join()
        return out

    monkeypatch.setattr(c, "infer_photos", infer_then_cancel)
    summary = BatchPipeline(c, ExportOptions(tmp_path / "out")).run(jobs, control=control)
    statuses = [r.status for r in summary.results]
    assert summary.cancelled
    # No photo is taken up after the cancel; the one just colorized is written if its write had started.
    assert len(colored) == 2 and summary.done in (1, 2)
    assert statuses == ["done"] * summary.done + ["cancelled"] * (8 - summary.done)


def test_pause_between_photos_reports_the_photos_taken_up_before_holding(colorizer, tmp_path):
    jobs = photos(tmp_path / "in", 7)
    events = []

    class Control(RunControl):
        def wait_if_paused(self):
            events.append("held")
            self.resume()  # the user resumes; the batch goes on

    control = Control()

    def on_started(job):
        events.append(("started", job.index))
        if job.index == 1:
            control.pause()  # in the middle of a batch of 3

    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(
        jobs, on_result=lambda r: events.append((r.status, r.index)), control=control, on_started=on_started)
    assert summary.done == 7
    held = events.index("held")
    # Photo 2 was not taken up; photos 0 and 1 were colorized, written and reported before the hold.
    assert events[:held] == [("started", 0), ("started", 1), ("done", 0), ("done", 1)]
    assert events.count("held") == 1


def test_image_started_comes_once_per_photo_before_its_result_in_input_order(colorizer, tmp_path):
    src = tmp_path / "in"
    photos(src, 5)
    (src / "p02b.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    jobs, _ = collect_inputs([src])
    events = []
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out")).run(
        jobs, on_result=lambda r: events.append(("result", r.index)),
        on_started=lambda job: events.append(("started", job.index)))
    assert summary.done == 5 and summary.failed == 1
    started = [i for kind, i in events if kind == "started"]
    assert started == list(range(6))  # the broken photo too: it was taken up, then failed
    assert [i for kind, i in events if kind == "result"] == list(range(6))
    for i in range(6):
        assert events.index(("started", i)) < events.index(("result", i))


def test_decode_and_encode_threads_scale_with_the_cores_within_bounds():
    from engine.batch.pipeline import io_threads

    assert [io_threads(n) for n in (1, 2, 4, 16, 64)] == [2, 2, 2, 8, 8]  # a GPU machine's 16 cores: 8 each


def test_a_photo_run_again_replaces_its_own_output_even_under_a_new_name_and_nothing_else(tmp_path):
    from engine.batch.planning import OutputPlanner
    from engine.options import ExportOptions, Job

    out = tmp_path / "out"
    out.mkdir()
    (out / "x.png").write_bytes(b"someone else's x")  # why the photo's first output was "x (1).png"
    (out / "x (1).png").write_bytes(b"the photo's own output")
    (out / "x (2).png").write_bytes(b"another copy")
    photo = tmp_path / "in" / "x.png"
    export = ExportOptions(out)
    again = Job(0, photo, photo.parent, replaces=out / "x (1).png")
    assert OutputPlanner(export, [again]).plan(again) == (out / "x (1).png", "")
    fresh = Job(0, photo, photo.parent)  # no earlier output of its own: a new name, as always
    assert OutputPlanner(export, [fresh]).plan(fresh) == (out / "x (3).png", "")
    elsewhere = Job(0, photo, photo.parent, replaces=tmp_path / "old-out" / "x (1).png")  # another folder then
    assert OutputPlanner(export, [elsewhere]).plan(elsewhere) == (out / "x (3).png", "")
    other = Job(0, photo, photo.parent, replaces=out / "y.png")  # never a file of another name
    assert OutputPlanner(export, [other]).plan(other) == (out / "x (3).png", "")


def test_folders_given_together_keep_their_names_and_two_of_one_name_their_parents_too(tmp_path):
    for folder in ("a/scans", "b/scans", "family", "one"):
        write_grey(tmp_path / folder / "p.png", 20, 30, 0)
    jobs, problems = collect_inputs([tmp_path / "a/scans", tmp_path / "b/scans", tmp_path / "family"])
    assert not problems
    assert [str(j.path.relative_to(j.root)) for j in jobs] == ["a/scans/p.png", "b/scans/p.png", "family/p.png"]
    alone, _ = collect_inputs([tmp_path / "one"])  # one folder: the output mirrors what is inside it
    assert [str(j.path.relative_to(j.root)) for j in alone] == ["p.png"]


def test_replace_and_skip_take_a_same_named_photos_own_copy_name_from_the_last_run(tmp_path):
    """Two photos of one name in a run: the second writes "x (1)". Run again, Replace must replace that "x (1)"
    (not add "x (2)" each time) and Skip must skip it (not colorize the photo again as "x (2)").
    """
    from engine.batch.planning import EXISTS, OutputPlanner
    from engine.options import Job

    out = tmp_path / "out"
    jobs = [Job(0, tmp_path / "a" / "x.png", tmp_path / "a"), Job(1, tmp_path / "b" / "x.png", tmp_path / "b")]
    first = OutputPlanner(ExportOptions(out), jobs)
    assert [first.plan(j) for j in jobs] == [(out / "x.png", ""), (out / "x (1).png", "")]
    out.mkdir()
    for name in ("x.png", "x (1).png"):
        (out / name).write_bytes(b"written by the first run")
    replace_all = OutputPlanner(ExportOptions(out, if_exists="overwrite"), jobs)
    assert [replace_all.plan(j) for j in jobs] == [(out / "x.png", ""), (out / "x (1).png", "")]
    skip = OutputPlanner(ExportOptions(out, if_exists="skip"), jobs)
    assert [skip.plan(j) for j in jobs] == [(out / "x.png", EXISTS), (out / "x (1).png", EXISTS)]
    copies = OutputPlanner(ExportOptions(out), jobs)  # "new_name" still writes beside both
    assert [copies.plan(j) for j in jobs] == [(out / "x (2).png", ""), (out / "x (3).png", "")]


def test_a_photo_run_again_into_its_own_copy_name_is_planned_as_replacing_it_not_as_a_new_name(tmp_path):
    """The row names the file it replaced ("replaced its last output 'x (1).png'"), and no "(1)" copy is counted."""
    from engine.batch.planning import OutputPlanner
    from engine.options import Job

    out = tmp_path / "out"
    out.mkdir()
    (out / "x.png").write_bytes(b"someone else's x")
    (out / "x (1).png").write_bytes(b"the photo's own output")
    photo = tmp_path / "in" / "x.png"
    again = Job(0, photo, photo.parent, replaces=out / "x (1).png")
    planner = OutputPlanner(ExportOptions(out), [again])
    assert planner.plan(again) == (out / "x (1).png", "") and list(planner.replaced_own) == [0] and not planner.renamed
    own_name = Job(0, photo, photo.parent, replaces=out / "x.png")
    planner = OutputPlanner(ExportOptions(out), [own_name])
    assert planner.plan(own_name) == (out / "x.png", "") and not planner.renamed and not planner.replaced_own


def test_a_folder_queued_later_does_not_take_the_name_of_another_folder_queued_before(tmp_path):
    for folder in ("box1/scans", "box2/scans"):
        write_grey(tmp_path / folder / "p.png", 20, 30, 0)
    first, _ = collect_inputs([tmp_path / "box1/scans"], keep_folder_names=True)
    queued = [(j.path, j.root) for j in first]
    assert [str(j.path.relative_to(j.root)) for j in first] == ["scans/p.png"]
    later, _ = collect_inputs([tmp_path / "box2/scans"], keep_folder_names=True, beside=queued)
    assert [str(j.path.relative_to(j.root)) for j in later] == ["box2/scans/p.png"]  # not a second "scans/"
    again, _ = collect_inputs([tmp_path / "box1/scans"], keep_folder_names=True, beside=queued)
    assert [j.root for j in again] == [j.root for j in first]  # the same folder again: its own name, as before


def test_a_folder_whose_subfolder_has_the_name_two_others_keep_writes_apart_from_them(tmp_path):
    """/p/a holding scans/, given beside /q/a/scans and /r/scans: the last two keep "a/scans" and "r/scans", so /p/a
    may not keep "a" alone, or its scans/ and /q/a/scans would write into one folder.
    """
    for folder in ("p/a/scans", "q/a/scans", "r/scans"):
        write_grey(tmp_path / folder / "x.png", 20, 30, 0)
    jobs, _ = collect_inputs([tmp_path / "p/a", tmp_path / "q/a/scans", tmp_path / "r/scans"])
    outputs = [str(j.path.relative_to(j.root)) for j in jobs]
    assert outputs == ["p/a/scans/x.png", "q/a/scans/x.png", "r/scans/x.png"]


@pytest.mark.parametrize("if_exists", ["overwrite", "skip"])
def test_a_photo_written_beside_itself_never_takes_a_copy_name_an_original_has(tmp_path, if_exists):
    """Colorizing x.png into its own folder, which also holds the original 'x (1).png' (not in this run): the
    output is 'x (2).png', never that original replaced or the photo skipped for it.
    """
    from engine.batch.planning import OutputPlanner
    from engine.options import Job

    folder = tmp_path / "album"
    write_grey(folder / "x.png", 20, 30, 0)
    write_grey(folder / "x (1).png", 20, 30, 1)
    job = Job(0, folder / "x.png", folder)
    assert OutputPlanner(ExportOptions(folder, if_exists=if_exists), [job]).plan(job) == (folder / "x (2).png", "")


def test_the_count_of_outputs_that_exist_stops_when_asked(tmp_path):
    """The window closing while a large queue's outputs are counted on a slow share: the count ends early."""
    from engine.batch.planning import copies_to_ask_about
    from engine.options import Job

    out = tmp_path / "out"
    jobs = [Job(i, write_grey(tmp_path / "in" / f"p{i}.png", 20, 30, i), tmp_path / "in") for i in range(4)]
    for i in range(4):
        write_grey(out / f"p{i}.png", 20, 30, i)
    assert copies_to_ask_about(ExportOptions(out), jobs) == 4
    looks = []
    assert copies_to_ask_about(ExportOptions(out), jobs, stop=lambda: looks.append(1) or len(looks) > 2) == 0
    assert len(looks) == 3  # stopped at the third photo, not after all four


def test_a_run_again_over_its_own_copy_name_says_it_replaced_that_file_and_counts_no_new_name(colorizer, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    write_grey(src / "x.png", 20, 30, 0)
    out.mkdir()
    (out / "x.png").write_bytes(b"kept: the user wrote a copy beside it")
    (out / "x (1).png").write_bytes(b"the photo's own last output")
    jobs, _ = collect_inputs([src])
    again = [replace(jobs[0], replaces=out / "x (1).png")]
    results: list[PhotoResult] = []
    summary = BatchPipeline(colorizer, ExportOptions(out)).run(again, on_result=results.append)
    assert summary.done == 1 and summary.renamed == 0 and "under a new name" not in summary.line()
    assert results[0].output == out / "x (1).png" and not results[0].renamed
    assert "replaced its last output 'x (1).png'" in results[0].message
    assert (out / "x.png").read_bytes() == b"kept: the user wrote a copy beside it"
    assert sorted(p.name for p in out.iterdir()) == ["x (1).png", "x.png"]


def test_a_run_again_whose_own_copy_name_goes_to_another_photo_is_not_said_to_have_replaced_it(tmp_path):
    from engine.batch.planning import OutputPlanner
    from engine.options import Job

    out = tmp_path / "out"
    out.mkdir()
    (out / "x.png").write_bytes(b"someone else's x")
    (out / "x (1).png").write_bytes(b"the photo's own output")
    photo, other = tmp_path / "in" / "x.png", tmp_path / "in2" / "x (1).png"
    again = Job(0, photo, photo.parent, replaces=out / "x (1).png")
    beside = Job(1, other, other.parent)  # a photo named "x (1)": that output name is its own
    planner = OutputPlanner(ExportOptions(out), [again, beside])
    assert planner.plan(again) == (out / "x (2).png", "")
    assert 0 in planner.renamed and 0 not in planner.replaced_own
    (out / "x (1).png").unlink()  # its last output deleted since: nothing replaced, whatever the name
    gone = Job(0, photo, photo.parent, replaces=out / "x (1).png")
    planner = OutputPlanner(ExportOptions(out), [gone])
    assert planner.plan(gone)[0] == out / "x (1).png" and not planner.replaced_own
