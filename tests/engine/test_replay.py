"""A CPU forward recorded on its second call with an input shape and replayed from then on
(engine/runtimes/replay.py) computes what the eager forward computes, for new inputs, with and without hints, over
several chunks of a batch, in each precision this CPU offers; and it is refused where a forward reads its data.
"""

import threading

import numpy as np
import pytest
import torch
from helpers import grey_photo
from torch.multiprocessing.reductions import StorageWeakRef

from engine.colorizer import pack, prepare
from engine.devices import precision_support
from engine.runtimes import dnnl
from engine.runtimes.optimized import OptimizedRuntime
from engine.runtimes.replay import Replays, _Recorder
from engine.weights import DEFAULT_WEIGHTS, load_model

CPU = torch.device("cpu")
SUPPORT = precision_support(CPU)
PRECISIONS = [pytest.param(p, marks=pytest.mark.skipif(SUPPORT[p] is not None, reason=f"{p}: {SUPPORT[p]}"))
              for p in ("fp32", "bf16")]
# The same ops on the same kernels: in practice bit for bit; a bound, not equality, as the arena's alignment is
# not the heap's
TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2}


@pytest.fixture(scope="module")
def shipped():
    return load_model(DEFAULT_WEIGHTS)


def canvases(batch, seed, size=96):
    return pack([prepare(grey_photo(size, size * 3 // 4, seed + i), size) for i in range(batch)])


def hint_maps(L, seed):
    rng = np.random.default_rng(seed)
    hints = np.zeros((L.shape[0], 3, *L.shape[2:]), np.float32)
    for n in range(L.shape[0]):
        for _ in range(4):
            y, x = rng.integers(0, L.shape[2]), rng.integers(0, L.shape[3])
            hints[n, :2, y, x] = rng.uniform(-40, 40, 2)
            hints[n, 2, y, x] = 1.0
    return hints


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("batch, hinted", [(1, False), (1, True), (3, False)])
def test_a_replayed_forward_equals_the_eager_forward_on_new_inputs(shipped, precision, batch, hinted):
    eager = OptimizedRuntime(shipped, CPU, precision, replay=False)
    replayed = OptimizedRuntime(shipped, CPU, precision)
    for rt in (eager, replayed):  # several chunks a batch: the recorded tail reuses its chunks' buffers
        rt.net.chunk_bytes = 1
    outputs = []
    for call in range(4):  # eager, recorded, replayed, replayed
        L = canvases(batch, seed=10 * call)
        hints = hint_maps(L, call) if hinted else None
        want, got = eager.run(L, hints), replayed.run(L, hints)
        assert np.abs(want).max() > 1.0
        assert np.abs(got - want).max() <= TOLERANCE[precision], f"call {call}"
        outputs.append(got)
    assert len(replayed.replays) == 1
    assert np.abs(outputs[3] - outputs[2]).max() > 1.0  # the replay read its new input


def test_a_record_shares_memory_between_tensors_whose_lives_do_not_overlap(shipped):
    rt = OptimizedRuntime(shipped, CPU, "fp32")
    L = canvases(1, seed=0, size=256)
    for _ in range(2):
        rt.run(L)
    (record,) = rt.replays._records.values()
    assert record.arena.numel() < record.made_bytes / 3


def test_replays_from_two_threads_each_get_their_own_photos(shipped):
    eager = OptimizedRuntime(shipped, CPU, "fp32", replay=False)
    replayed = OptimizedRuntime(shipped, CPU, "fp32")
    inputs = [canvases(1, seed=s) for s in range(6)]
    want = [eager.run(L) for L in inputs]
    for L in inputs[:2]:
        replayed.run(L)  # recorded
    got: dict[int, np.ndarray] = {}

    def work(indices):
        for i in indices:
            got[i] = replayed.run(inputs[i])

    threads = [threading.Thread(target=work, args=(r,)) for r in (range(0, 6, 2), range(1, 6, 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(6):
        assert np.abs(got[i] - want[i]).max() <= TOLERANCE["fp32"], i


def test_a_forward_that_reads_its_data_is_not_recorded():
    def forward(L, scope, out, hints):
        scale = float(L.max())  # a value the replay could not know
        return out.copy_(L[:, :1, ::2, ::2].expand(out.shape) * scale)

    replays = Replays(forward)
    L = np.ones((1, 1, 8, 8), np.float32)
    result = np.empty((1, 2, 4, 4), np.float32)
    with torch.inference_mode():
        assert [replays.run("key", L, None, result) for _ in range(3)] == [False, False, False]
    assert len(replays) == 0


def test_recording_frees_each_tensor_when_the_forward_drops_it_and_replays_memory_reused_meanwhile():
    """The record holds slots, not the forward's tensors: recording costs an eager call's memory, not all its tensors'
    at once (at 512 px fp32 that had doubled the peak); a tensor made where a freed one was is a value of its own.
    """
    freed = []

    def forward(L, scope, out, hints):
        a = L * 2.0
        weak = StorageWeakRef(a.untyped_storage())
        b = a + 1.0
        del a
        freed.append(weak.expired())
        c = torch.empty(b.shape)  # the allocator may hand it a's memory
        torch.mul(b, 3.0, out=c)
        return out.copy_(torch.cat([c - L, b], 1))

    replays = Replays(forward)
    result = np.empty((1, 2, 8, 8), np.float32)
    rng = np.random.default_rng(0)
    with torch.inference_mode():
        for call in range(4):  # eager, recorded, replayed, replayed
            L = rng.random((1, 1, 8, 8), np.float32)
            ran = replays.run("key", L, None, result)  # the first call is the caller's to run eagerly
            assert ran == (call > 0)
            if ran:
                assert np.allclose(result, np.concatenate([(2 * L + 1) * 3 - L, 2 * L + 1], 1)), call
    assert freed == [True]  # in the recording call, the only one that ran the forward here


def test_a_storage_made_in_memory_a_freed_one_had_is_a_value_of_its_own():
    memory = np.zeros(16, np.float32)
    recorder = _Recorder([])
    first = torch.from_numpy(memory)
    recorder.made(first)
    assert recorder._value(first) == 0
    del first
    again = torch.from_numpy(memory)  # the same address, another storage
    assert again.data_ptr() == memory.ctypes.data
    assert recorder._value(again) is None


def test_a_forward_that_moves_a_tensor_it_made_is_not_recorded():
    def forward(L, scope, out, hints):
        buffer = torch.empty(0)
        torch.mul(L, 2.0, out=buffer)  # out= resizes the empty buffer: its memory moves
        return out.copy_(torch.cat([buffer, buffer], 1))

    replays = Replays(forward)
    L = np.ones((1, 1, 8, 8), np.float32)
    result = np.empty((1, 2, 8, 8), np.float32)
    with torch.inference_mode():
        assert [replays.run("key", L, None, result) for _ in range(3)] == [False, False, False]
    assert len(replays) == 0


def test_release_memory_drops_the_records(shipped):
    rt = OptimizedRuntime(shipped, CPU, "fp32")
    L = canvases(1, seed=0)
    for _ in range(2):
        rt.run(L)
    assert len(rt.replays) == 1
    rt.release_memory()
    assert len(rt.replays) == 0
    assert np.abs(rt.run(L) - OptimizedRuntime(shipped, CPU, "fp32", replay=False).run(L)).max() <= 1e-4


@pytest.mark.skipif(dnnl.missing() is not None, reason=str(dnnl.missing()))
def test_a_bound_primitive_computes_on_what_its_tensors_hold_at_each_call():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 8, 12, 12, generator=g).contiguous(memory_format=torch.channels_last)
    conv = dnnl.Convolution(torch.randn(16, 8, 3, 3, generator=g), torch.randn(16, generator=g), x, 1,
                            ((1, 1), (1, 1)), 1, 1, "relu")
    tape: list = []
    with dnnl.recording(tape):
        y = conv(x)
    (step,) = tape
    x.copy_(torch.randn(x.shape, generator=g))
    step()
    assert torch.allclose(y, conv(x.clone(memory_format=torch.channels_last)), atol=1e-5)


def test_recording_does_not_import_the_compiler():
    """A dispatch mode's default guard imports torch._dynamo (about a second) on the first record: a pause at the
    first hint preview of a session.
    """
    import subprocess
    import sys

    code = ("import sys, torch; from engine.runtimes.optimized import OptimizedRuntime; "
            "from engine.weights import DEFAULT_WEIGHTS, load_model; "
            "rt = OptimizedRuntime(load_model(DEFAULT_WEIGHTS), torch.device('cpu'), 'fp32'); "
            "import numpy as np; L = np.zeros((1, 1, 64, 64), np.float32); [rt.run(L) for _ in range(3)]; "
            "print(len(rt.replays), 'torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["1", "False"]
