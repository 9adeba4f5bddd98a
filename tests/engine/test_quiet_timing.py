"""On the CPU, and in compare mode, a model call runs with no decode or write beside it."""

import threading
import time

import pytest
from helpers import random_model, write_grey

import engine.batch.pipeline as pipeline_module
from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.batch.quiet import NoGate, QuietGate, gate_for
from engine.colorizer import Colorizer
from engine.options import ColorizeSettings, ExportOptions


def test_a_timed_call_waits_for_running_background_work_and_holds_new_work():
    gate = QuietGate()
    events: list[str] = []
    in_background = threading.Event()
    timed_waiting = threading.Event()

    def running_work():
        with gate.background():
            in_background.set()
            timed_waiting.wait(5)
            time.sleep(0.05)  # the timed call is waiting by now
            events.append("first work ends")

    def later_work():
        timed_waiting.wait(5)
        time.sleep(0.02)  # arrives while the timed call waits: it must not start before the call ends
        with gate.background():
            events.append("later work starts")

    threads = [threading.Thread(target=running_work), threading.Thread(target=later_work)]
    threads[0].start()
    in_background.wait(5)
    threads[1].start()
    timed_waiting.set()
    with gate.timed():
        events.append("timed call")
    for t in threads:
        t.join(5)
    assert events == ["first work ends", "timed call", "later work starts"]


def test_background_work_overlaps_other_background_work():
    gate = QuietGate()
    both_in = threading.Barrier(2, timeout=5)

    def work():
        with gate.background():
            both_in.wait()  # raises BrokenBarrierError if the two could not be inside together

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert not both_in.broken


def test_without_a_comparison_nothing_waits():
    gate = NoGate()
    with gate.timed(), gate.background(), gate.timed():
        pass  # a real gate would deadlock here


def test_a_gpu_overlaps_io_with_the_model_unless_two_engines_are_timed():
    assert type(gate_for("cuda", comparing=False)) is NoGate
    assert type(gate_for("cuda", comparing=True)) is QuietGate
    assert type(gate_for("cpu", comparing=False)) is QuietGate


@pytest.mark.parametrize("compare", [True, False])
def test_on_the_cpu_no_decode_or_write_runs_during_a_model_call(compare, tmp_path, monkeypatch):
    intervals: dict[str, list[tuple[float, float]]] = {"model": [], "io": []}

    def timed(kind, fn):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                intervals[kind].append((t0, time.perf_counter()))
        return wrapper

    monkeypatch.setattr(pipeline_module, "decode_photo", timed("io", pipeline_module.decode_photo))
    monkeypatch.setattr(pipeline_module, "write_photo", timed("io", pipeline_module.write_photo))
    model = random_model()
    ours = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=2, precision="fp32"), model=model)
    ours.infer_photos = timed("model", ours.infer_photos)  # type: ignore[method-assign]
    baseline = None
    if compare:
        baseline = Colorizer.create(ColorizeSettings(engine="baseline", device="cpu", size=64, batch_size=2),
                                    model=model)
        baseline.infer = timed("model", baseline.infer)  # type: ignore[method-assign]
    for i in range(9):
        write_grey(tmp_path / "in" / f"p{i}.png", 300 + 7 * i, 400, i)
    jobs, _ = collect_inputs([tmp_path / "in"])
    summary = BatchPipeline(ours, ExportOptions(tmp_path / "out"), compare=baseline).run(jobs)
    assert summary.done == 9
    assert len(intervals["io"]) == 18 and len(intervals["model"]) == (10 if compare else 5)  # 5 batches
    overlaps = [(m, io) for m in intervals["model"] for io in intervals["io"] if io[0] < m[1] and m[0] < io[1]]
    assert overlaps == []


def test_an_interrupt_while_a_timed_call_waits_leaves_background_work_free(monkeypatch):
    gate = QuietGate()
    holding, release = threading.Event(), threading.Event()

    def running_work():
        with gate.background():
            holding.set()
            release.wait(5)

    t = threading.Thread(target=running_work)
    t.start()
    holding.wait(5)
    real_wait = gate._cond.wait

    def interrupted(*a, **kw):
        monkeypatch.setattr(gate._cond, "wait", real_wait)
        raise KeyboardInterrupt  # Ctrl-C while the model call waits for the running decode

    monkeypatch.setattr(gate._cond, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt), gate.timed():
        pass
    release.set()
    t.join(5)
    entered = threading.Event()

    def later_work():
        with gate.background():
            entered.set()

    threading.Thread(target=later_work, daemon=True).start()
    assert entered.wait(5)  # a waiting count left behind would hold it for ever


def test_a_cancel_while_the_model_call_waits_for_a_decode_drops_the_batch_uncolorized(tmp_path, monkeypatch):
    import engine.batch.decode_ahead as decode_ahead
    from engine.batch.pipeline import RunControl

    real_decode = decode_ahead.decode
    second_started, release = threading.Event(), threading.Event()
    control = RunControl()

    def decode(path, *a, **kw):
        if path.name == "p0.png":
            second_started.wait(5)  # photo 0 is ready only once photo 1's decode runs beside
        if path.name == "p1.png":
            second_started.set()
            release.wait(5)
        return real_decode(path, *a, **kw)

    def cancel_then_release():
        second_started.wait(5)
        time.sleep(0.3)  # the model call for photo 0 is waiting for photo 1's decode by now
        control.cancel()
        release.set()

    monkeypatch.setattr(decode_ahead, "decode", decode)
    calls = []
    ours = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=1, precision="fp32"),
                            model=random_model())
    real_infer = ours.infer_photos
    ours.infer_photos = lambda *a, **kw: calls.append(1) or real_infer(*a, **kw)  # type: ignore[method-assign]
    for i in range(3):
        write_grey(tmp_path / "in" / f"p{i}.png", 40, 50, i)
    jobs, _ = collect_inputs([tmp_path / "in"])
    threading.Thread(target=cancel_then_release, daemon=True).start()
    results = []
    summary = BatchPipeline(ours, ExportOptions(tmp_path / "out"), decode_workers=2).run(
        jobs, on_result=results.append, control=control)
    assert summary.cancelled and summary.done == 0 and calls == []
    assert [r.status for r in results] == ["cancelled"] * 3
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
