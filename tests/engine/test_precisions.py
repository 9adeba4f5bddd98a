"""Every precision this CPU offers agrees with the fp32 baseline within the bound documented for it.

The bounds are ``engine.runtimes.base.AGREEMENT``. These tests run the shipped weights on the sample
photos, as the bench and the README do: an untrained model agrees ~100x closer in bf16 (its softmax
over colour bins is flat), so it would pass any bound and show nothing. A precision the CPU does not
offer (bf16 without AVX-512 BF16 or AMX, fp16 on any CPU) is skipped with the reason
``precision_support`` gives, so the same tests hold on AVX2, AVX-512 BF16 and AMX machines.
"""

import numpy as np
import pytest
import torch

from engine.batch.inputs import collect_inputs
from engine.batch.pipeline import BatchPipeline
from engine.bench import bench_inputs
from engine.colorizer import Colorizer
from engine.devices import PRECISIONS, best_precision, precision_support
from engine.options import ColorizeSettings, ExportOptions
from engine.runtimes import BaselineRuntime, OptimizedRuntime
from engine.runtimes.base import AGREEMENT, ab_difference
from engine.weights import DEFAULT_WEIGHTS, RESOURCES, load_model

CPU = torch.device("cpu")
SUPPORT = precision_support(CPU)
OFFERED = [pytest.param(p, marks=pytest.mark.skipif(SUPPORT[p] is not None, reason=f"{p}: {SUPPORT[p]}"))
           for p in PRECISIONS]


@pytest.fixture(scope="module")
def shipped():
    return load_model(DEFAULT_WEIGHTS)


@pytest.fixture(scope="module")
def baseline_out(shipped):
    """The fp32 baseline on the bench's inputs (512 px sample photos), per batch size."""
    base = BaselineRuntime(shipped, CPU)
    return {batch: base.run(bench_inputs(512, batch)) for batch in (1, 8)}


def test_every_precision_has_a_bound_and_longer_mantissas_have_tighter_ones():
    assert set(AGREEMENT) == set(PRECISIONS)
    for p in PRECISIONS:
        assert 0 < AGREEMENT[p].p999 <= AGREEMENT[p].max_abs
    # fp16 keeps 10 stored mantissa bits to bf16's 7: its rounding is 8x finer, so its bound is tighter.
    assert AGREEMENT["fp32"].max_abs < AGREEMENT["fp16"].p999
    assert AGREEMENT["fp16"].p999 < AGREEMENT["bf16"].p999 and AGREEMENT["fp16"].max_abs < AGREEMENT["bf16"].max_abs


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("precision", OFFERED)
def test_optimized_agrees_with_the_baseline_on_the_sample_photos(shipped, baseline_out, precision, batch):
    base = baseline_out[batch]
    out = OptimizedRuntime(shipped, CPU, precision).run(bench_inputs(512, batch))
    assert np.abs(base).max() > 30  # the shipped model's colours, not a near-grey map that agrees with anything
    p999, worst = ab_difference(out, base)
    bound = AGREEMENT[precision]
    assert p999 <= bound.p999, f"{precision} batch {batch}: p99.9 |ab diff| {p999:.3g} > {bound.p999}"
    assert worst <= bound.max_abs, f"{precision} batch {batch}: max |ab diff| {worst:.3g} > {bound.max_abs}"


@pytest.mark.parametrize("precision", OFFERED)
def test_compare_mode_reports_a_difference_within_the_bound_of_each_offered_precision(shipped, precision, tmp_path):
    jobs, _ = collect_inputs([RESOURCES / "samples"])
    assert len(jobs) >= 4
    settings = ColorizeSettings(device="cpu", size=256, batch_size=3, precision=precision)
    colorizer = Colorizer.create(settings, model=shipped)
    assert colorizer.runtime.precision == precision
    baseline = Colorizer.create(ColorizeSettings(engine="baseline", device="cpu", size=256, batch_size=3),
                                model=shipped)
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "out"), compare=baseline).run(jobs)
    assert summary.done == len(jobs)
    assert summary.compare_speedup is not None and summary.compare_speedup > 0
    assert summary.max_abs_diff is not None and summary.max_abs_diff <= AGREEMENT[precision].max_abs


@pytest.mark.parametrize("native, speedup, picked", [(True, 2.0, "bf16"), (True, 0.7, "fp32"), (True, 1.1, "fp32"),
                                                     (False, None, "fp32")])
def test_auto_takes_bf16_on_a_cpu_only_where_it_is_native_and_measured_faster(monkeypatch, native, speedup, picked):
    """A Xeon whose hypervisor hides AMX has AVX-512 BF16 and runs it slower than fp32: native is not enough."""
    import engine.devices as devices

    monkeypatch.delenv(devices.BF16_ENV, raising=False)
    monkeypatch.setattr(devices, "cpu_has_fast_bf16", lambda: native)
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: speedup)
    assert best_precision(CPU) == picked
    assert (precision_support(CPU)["bf16"] is None) is native  # still offered where native, for whoever asks
    monkeypatch.setenv(devices.BF16_ENV, "1")  # every process of a cluster run the same, whatever its probe read
    assert best_precision(CPU) == ("bf16" if native else "fp32")  # never emulated bf16, even when asked
    monkeypatch.setenv(devices.BF16_ENV, "0")
    assert best_precision(CPU) == "fp32"


def test_the_bf16_probe_is_not_run_where_onednn_is_held_below_its_bf16_kernels(monkeypatch):
    import engine.devices as devices

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # the bench's imitation of an AVX2-only CPU
    assert not devices._onednn_may_use_bf16()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    assert devices._onednn_may_use_bf16()


def test_the_bf16_probe_smoke_measures_where_bf16_is_native_and_says_nothing_elsewhere():
    from engine.devices import cpu_bf16_speedup, cpu_has_fast_bf16

    speedup = cpu_bf16_speedup()
    assert (speedup is None) is (not cpu_has_fast_bf16())
    assert speedup is None or speedup == float("inf") or 0.05 < speedup < 20  # a ratio of two timings (inf: AMX)
    assert cpu_bf16_speedup() == speedup  # measured once per process


def test_auto_precision_agrees_within_the_bound_of_the_precision_it_picked(shipped, baseline_out):
    """Auto is bf16 where it is native and faster, else fp32: the bound follows the pick, not the machine."""
    colorizer = Colorizer.create(ColorizeSettings(device="cpu"), model=shipped)
    picked = colorizer.runtime.precision
    assert picked == best_precision(CPU)
    p999, worst = ab_difference(colorizer.infer(bench_inputs(512, 1)), baseline_out[1])
    assert p999 <= AGREEMENT[picked].p999 and worst <= AGREEMENT[picked].max_abs
