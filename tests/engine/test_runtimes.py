"""The optimized runtime computes what the baseline computes, for any shapes and batch sizes.

On the CPU, fp32 here (pinned, whatever "auto" would pick on this CPU), held to the documented fp32
agreement; bf16 is held to its own in test_precisions.py, with the shipped weights, and CUDA fp16 to
its own below.
"""

import numpy as np
import pytest
import torch
from helpers import grey_photo, random_model

from engine.colorizer import pack, prepare
from engine.devices import precision_support
from engine.runtimes import BaselineRuntime, make_runtime
from engine.runtimes.base import AGREEMENT, ab_difference
from engine.runtimes.optimized import OptimizedRuntime
from engine.runtimes.pool import BufferPool

FP32_TOL = AGREEMENT["fp32"].max_abs  # ab, Lab units
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def model():
    return random_model()


@pytest.fixture(scope="module")
def runtimes(model):
    return BaselineRuntime(model, CPU), OptimizedRuntime(model, CPU, "fp32")


def canvas(shapes, seed=0):
    return pack([prepare(grey_photo(h, w, seed + i), 96) for i, (h, w) in enumerate(shapes)])


@pytest.mark.parametrize("shapes", [
    [(50, 70)],  # not multiples of 16
    [(33, 100), (100, 33)],
    [(96, 96)] * 3,
    [(81, 47), (60, 90), (17, 95), (95, 95), (40, 40)],
    [(64, 64)] * 8,
])
def test_optimized_fp32_matches_baseline(runtimes, shapes):
    base, opt = runtimes
    L = canvas(shapes)
    assert L.shape[0] == len(shapes)
    a, b = base.run(L), opt.run(L)
    assert a.shape == b.shape == (len(shapes), 2, L.shape[2] // 2, L.shape[3] // 2)
    assert np.abs(a).max() > 1.0  # the comparison is not between two zero maps
    assert np.abs(a - b).max() <= FP32_TOL


def test_pool_never_leaks_one_photos_data_into_another(model):
    opt = OptimizedRuntime(model, CPU, "fp32", pool=BufferPool(), replay=False)  # the eager forward's pool
    x = canvas([(64, 96)], seed=1)
    first = opt.run(x)
    opt.run(canvas([(96, 64), (64, 64)], seed=2))  # other shapes in between
    opt.run(canvas([(64, 96)] * 4, seed=3))  # same spatial shape, other batch
    opt.run(canvas([(64, 96)], seed=4))  # same shape, other content: buffers reused
    again = opt.run(x)
    assert opt.pool.reuses > 0
    np.testing.assert_array_equal(first, again)


def test_pool_reuses_buffers_for_repeated_shapes():
    pool = BufferPool()
    with pool.scope() as s:
        a = s.acquire((2, 3, 4, 4), torch.float32, CPU, channels_last=True)
        b = s.acquire((2, 3, 4, 4), torch.float32, CPU, channels_last=True)
        assert a.data_ptr() != b.data_ptr()  # both live: never aliased
    with pool.scope() as s:
        c = s.acquire((2, 3, 4, 4), torch.float32, CPU, channels_last=True)
    assert c.data_ptr() in (a.data_ptr(), b.data_ptr())
    assert c.is_contiguous(memory_format=torch.channels_last)
    assert pool.allocations == 2 and pool.reuses == 1


def test_pool_evicts_free_buffers_beyond_its_budget():
    pool = BufferPool(max_bytes=1000)
    for n in range(1, 6):
        with pool.scope() as s:
            s.acquire((n, 100), torch.float32, CPU)
    assert pool.held_bytes <= 1000 + 5 * 100 * 4


def test_input_shape_is_checked(runtimes):
    with pytest.raises(ValueError, match="multiples of 32"):
        runtimes[1].run(np.zeros((1, 1, 50, 64), np.float32))


def test_baseline_refuses_reduced_precision(model):
    with pytest.raises(ValueError):
        make_runtime("baseline", model, "cpu", "bf16")


def test_unknown_engine_is_a_clear_error(model):
    with pytest.raises(ValueError, match="unknown engine"):
        make_runtime("turbo", model, "cpu")


def test_fp16_is_not_offered_on_the_cpu_with_a_reason():
    support = precision_support(CPU)
    assert support["fp32"] is None
    assert support["fp16"] and "CUDA" in support["fp16"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_fp16_with_graphs_matches_baseline():
    """With the shipped weights: an untrained model agrees far closer in reduced precision and would pass
    any bound. fp16 is held to its own bound, tighter than bf16's (10 stored mantissa bits to 7).
    """
    from engine.weights import DEFAULT_WEIGHTS, load_model

    shipped = load_model(DEFAULT_WEIGHTS)
    dev = torch.device("cuda")
    base = BaselineRuntime(shipped, dev)
    opt = OptimizedRuntime(shipped, dev, "fp16")
    bound = AGREEMENT["fp16"]
    for shapes in ([(64, 64)], [(64, 96)] * 3, [(64, 64)]):  # new shape, graph replay on a known one
        L = canvas(shapes)
        p999, worst = ab_difference(opt.run(L), base.run(L))
        assert p999 <= bound.p999 and worst <= bound.max_abs, (shapes, p999, worst)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_in_chunks_of_photos_inside_a_captured_graph_equals_one_pass(model):
    """The chunked blocks gather their last outputs into a pooled buffer: inside a CUDA graph too."""
    dev = torch.device("cuda")
    chunked, whole = OptimizedRuntime(model, dev, "fp32"), OptimizedRuntime(model, dev, "fp32")
    chunked.net.chunk_pixels = 64 * 64 * 2  # chunks of two photos and a last one of one
    assert chunked.net.photos_per_chunk(64, 64) == 2 and whole.net.photos_per_chunk(64, 64) >= 5
    L = canvas([(64, 64)] * 5)
    for _ in range(2):  # capture, then replay
        assert np.abs(chunked.run(L) - whole.run(L)).max() <= FP32_TOL


def test_high_resolution_blocks_in_chunks_give_the_same_result(model):
    base = BaselineRuntime(model, CPU)
    opt = OptimizedRuntime(model, CPU, "fp32")
    opt.net.chunk_bytes = 64 * 64 * 2 * opt.net.chunk_bytes_per_pixel  # chunks of two photos (and a last one of one)
    assert opt.net.photos_per_chunk(64, 64) == 2
    L = canvas([(64, 64)] * 5)
    assert np.abs(base.run(L) - opt.run(L)).max() <= FP32_TOL


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_no_convolution_output_of_a_cpu_chunk_is_larger_than_the_chunk_budget(model, precision, monkeypatch):
    """Above glibc's mmap threshold each allocation is mapped fresh (page faults, zeroing, every call): the
    chunks are sized so that no convolution output outside the pool outgrows the budget (convolution outputs are
    what this records; the logits' fp32 copy is smaller than the widest of them).
    """
    from engine.runtimes import folded

    opt = OptimizedRuntime(model, CPU, precision)
    opt.net.chunk_bytes = 64 * 64 * 2 * opt.net.chunk_bytes_per_pixel
    sizes: list[int] = []
    call, plus = folded.FConv.__call__, folded.FConv.plus
    record = lambda y: (sizes.append(y.numel() * y.element_size()), y)[1]  # noqa: E731
    monkeypatch.setattr(folded.FConv, "__call__", lambda self, x, *a, **k: record(call(self, x, *a, **k)))
    monkeypatch.setattr(folded.FConv, "plus", lambda self, x, o: record(plus(self, x, o)))
    opt.run(canvas([(64, 64)] * 5))
    assert max(sizes) <= opt.net.chunk_bytes
    assert max(sizes) > opt.net.chunk_bytes / 2  # the widest tensor was found, not overestimated


@pytest.mark.parametrize("hinted", [False, True])
def test_bf16_in_chunks_of_photos_equals_bf16_in_one_pass_with_and_without_hints(hinted):
    """On the CPU the tail (last decoder stage, read-out, refinement) runs over chunks too; a batch the
    chunk does not divide, with hints or without, comes out as one pass over the batch gives it.
    """
    from engine.model import with_hint_channels, with_hint_decoder

    model = with_hint_decoder(with_hint_channels(random_model(seed=3)))
    with torch.no_grad():  # the hint inputs start at zero weight: give them some, so hints change the output
        for w in model.parameters():
            if w.dim() == 4:
                w.add_(torch.randn_like(w) * 0.05)
    chunked = OptimizedRuntime(model, CPU, "bf16")
    whole = OptimizedRuntime(model, CPU, "bf16")
    chunked.net.chunk_bytes = 64 * 64 * 2 * chunked.net.chunk_bytes_per_pixel  # chunks of two photos and one
    whole.net.chunk_bytes = 64 * 64 * 16 * whole.net.chunk_bytes_per_pixel
    L = canvas([(64, 64)] * 5)
    hints = None
    if hinted:
        hints = np.zeros((5, 3, 64, 64), np.float32)
        hints[:, 0, 10:20, 30:40], hints[:, 1, 10:20, 30:40], hints[:, 2, 10:20, 30:40] = 40.0, -20.0, 1.0
    a, b = chunked.run(L, hints), whole.run(L, hints)
    assert np.abs(a - b).max() <= 1e-5
    plain = whole.run(L)
    assert (np.abs(plain - b).max() > 0.1) == hinted  # the hints reach the output


def test_the_doubt_pull_only_mutes_and_mutes_most_where_the_colour_is_unsure(model):
    from engine.readout import Readout, ab_variance, doubt_scale

    sure, unsure = torch.zeros(1, 4, 1, 1), torch.zeros(1, 4, 1, 1)
    sure[0, 0] = 20.0  # nearly all on the first bin
    centres = torch.tensor([[40.0, 0.0], [-40.0, 0.0], [0.0, 40.0], [0.0, -40.0]])
    v_sure, v_unsure = ab_variance(sure, centres, 1.0), ab_variance(unsure, centres, 1.0)
    assert float(v_sure) < 1.0 and float(v_unsure) == pytest.approx(1600.0, rel=1e-4)
    assert float(doubt_scale(v_sure, 4.0)) > 0.99 and float(doubt_scale(v_unsure, 4.0)) < 0.7
    assert float(doubt_scale(v_unsure, 0.0)) == 1.0

    L = canvas([(64, 96), (40, 80)])
    sharp = random_model()
    with torch.no_grad():  # a sharper head: sure in some places, unsure in others, as a trained model is
        sharp.head.weight.mul_(8.0)
    plain = BaselineRuntime(sharp, CPU).run(L)
    pulled = random_model()
    with torch.no_grad():
        pulled.head.weight.mul_(8.0)
    pulled.readout = Readout(temperature=pulled.readout.temperature, doubt_pull=4.0, chroma_gain=1.2)
    base, opt = BaselineRuntime(pulled, CPU).run(L), OptimizedRuntime(pulled, CPU, "fp32").run(L)
    assert np.abs(base - opt).max() <= FP32_TOL  # both runtimes pull alike
    shrink = np.hypot(*base.transpose(1, 0, 2, 3)) / np.maximum(np.hypot(*plain.transpose(1, 0, 2, 3)), 1e-3) / 1.2
    assert shrink.max() <= 1.0 + 1e-4 and shrink.min() < 0.9  # never more colour (gain aside), somewhere less
    assert np.percentile(shrink, 90) - np.percentile(shrink, 10) > 0.05  # more in some places than in others


def test_a_lite2_encoder_runs_alike_in_both_runtimes():
    lite2 = random_model(encoder="lite2")
    L = canvas([(64, 96), (50, 70)])
    a, b = BaselineRuntime(lite2, CPU).run(L), OptimizedRuntime(lite2, CPU, "fp32").run(L)
    assert np.abs(a).max() > 1.0 and np.abs(a - b).max() <= FP32_TOL


def test_weights_packed_per_input_shape_agree_and_stay_bounded_as_shapes_vary(model):
    """Each convolution keeps its weight in oneDNN's layout for the last few input shapes only: photos of many
    sizes give the baseline's colours, and the packed copies do not pile up.
    """
    from engine.runtimes.folded import PACKED_SHAPES

    base, opt = BaselineRuntime(model, CPU), OptimizedRuntime(model, CPU, "fp32")
    for shapes in ([(64, 64)], [(64, 96)] * 2, [(96, 64)], [(32, 64)] * 3, [(64, 32)], [(64, 64)], [(64, 32)]):
        L = canvas(shapes)  # the last shape is still packed: a cache hit
        assert np.abs(base.run(L) - opt.run(L)).max() <= FP32_TOL, shapes
    convs = [opt.net.stem, *(c for b in opt.net.blocks for c in (b.expand, b.dw, b.project) if c is not None)]
    if not convs[0].fused:
        pytest.skip("no oneDNN fused convolution in this torch build")
    assert all(len(c.packed) <= PACKED_SHAPES for c in convs)
    assert max(len(c.packed) for c in convs) == PACKED_SHAPES  # six shapes went through: the oldest were dropped
    opt.release_memory()  # what the out-of-memory ladder calls: the packed copies go too
    assert all(not c.packed for c in opt.net._convs())
