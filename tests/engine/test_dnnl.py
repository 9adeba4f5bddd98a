"""oneDNN primitives built once (engine/runtimes/dnnl.py) compute what PyTorch's convolution computes, for the
convolution kinds, paddings, layouts and post-ops the runtime gives them, and the runtime falls back to PyTorch's
call where the library is missing or an input's channels are not dense.
"""

import importlib.metadata
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import grey_photo, random_model

from engine.colorizer import pack, prepare
from engine.devices import cpu_has_fast_bf16
from engine.runtimes import BaselineRuntime, dnnl
from engine.runtimes.base import AGREEMENT
from engine.runtimes.folded import CL, FConv
from engine.runtimes.optimized import OptimizedRuntime

CPU = torch.device("cpu")
needs_dnnl = pytest.mark.skipif(dnnl.missing() is not None, reason=str(dnnl.missing()))


def reference(x, w, b, stride, padding, dilation, groups, act, residual=None):
    (pt, pb), (pl, pr) = padding
    y = F.conv2d(F.pad(x.float(), (pl, pr, pt, pb)), w.float(), b, stride, 0, dilation, groups)
    if act == "relu":
        y = y.relu()
    elif act == "relu6":
        y = y.clamp(0, 6)
    return y if residual is None else y + residual.float()


def inputs(n, c, h, w, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, c, h, w, generator=g).contiguous(memory_format=CL)


@needs_dnnl
@pytest.mark.parametrize("cin, cout, k, stride, groups, dilation, act, padding", [
    (16, 96, 1, 1, 1, 1, "relu6", ((0, 0), (0, 0))),  # expand
    (24, 24, 3, 1, 24, 1, "relu6", ((1, 1), (1, 1))),  # depthwise
    (24, 24, 3, 2, 24, 1, "relu6", ((0, 1), (0, 1))),  # depthwise, stride 2, TF's uneven "same"
    (8, 8, 5, 2, 8, 1, "relu6", ((1, 2), (1, 2))),
    (3, 16, 3, 2, 1, 1, "relu6", ((0, 1), (0, 1))),  # the stem
    (40, 24, 3, 1, 1, 1, "relu", ((1, 1), (1, 1))),  # a decoder convolution
    (32, 16, 3, 1, 1, 6, "relu", ((6, 6), (6, 6))),  # a dilated ASPP branch
    (32, 8, 1, 1, 1, 1, None, ((0, 0), (0, 0))),  # a project, no activation
])
def test_a_built_convolution_equals_pytorchs_in_fp32(cin, cout, k, stride, groups, dilation, act, padding):
    x = inputs(2, cin, 20, 28)
    g = torch.Generator().manual_seed(1)
    w, b = torch.randn(cout, cin // groups, k, k, generator=g) * 0.2, torch.randn(cout, generator=g)
    conv = dnnl.Convolution(w, b, x, stride, padding, dilation, groups, act)
    want = reference(x, w, b, stride, padding, dilation, groups, act)
    got = conv(x)
    assert got.shape == want.shape and got.is_contiguous(memory_format=CL)
    assert want.abs().max() > 1.0
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    again = conv(inputs(2, cin, 20, 28, seed=5))  # built once, run again on other data
    assert (again - reference(inputs(2, cin, 20, 28, seed=5), w, b, stride, padding, dilation, groups,
                              act)).abs().max() <= 1e-4 * want.abs().max()


@needs_dnnl
def test_the_residual_add_is_a_post_op_and_a_channel_slice_input_computes_right():
    buf = inputs(2, 40, 16, 16)
    x = buf[:, 8:32]  # a channel slice of a channels_last buffer: dense channels, wider pixel stride
    residual = inputs(2, 24, 16, 16, seed=3)
    g = torch.Generator().manual_seed(2)
    w, b = torch.randn(24, 24, 1, 1, generator=g) * 0.2, torch.randn(24, generator=g)
    conv = dnnl.Convolution(w, b, x, 1, ((0, 0), (0, 0)), 1, 1, None, residual)
    want = reference(x, w, b, 1, ((0, 0), (0, 0)), 1, 1, None, residual)
    assert (conv(x, residual) - want).abs().max() <= 1e-4 * want.abs().max()
    # oneDNN 3.2 reads such a slice with its generic kernel (500x slower): FConv gives it to PyTorch's call
    assert conv.generic, conv.implementation
    fconv = FConv(w.contiguous(memory_format=CL), b, fused=True, direct=True)
    assert (fconv.plus(x, residual) - want).abs().max() <= 1e-4 * want.abs().max()
    assert any(isinstance(v, torch.Tensor) for v in fconv.packed.values())  # PyTorch's packed weight ran it


@needs_dnnl
def test_an_input_without_dense_channels_is_refused_and_fconv_takes_pytorchs_call():
    x = torch.randn(1, 8, 12, 12)  # NCHW: channels strided
    assert dnnl.nhwc_strides(x) is None
    with pytest.raises(ValueError):
        dnnl.Convolution(torch.randn(4, 8, 1, 1), None, x, 1, ((0, 0), (0, 0)), 1, 1, None)
    conv = FConv(torch.randn(4, 8, 3, 3).contiguous(memory_format=CL), torch.randn(4), 1, 1, act="relu",
                 fused=True, direct=True)
    got = conv(x)
    assert not conv.packed or all(isinstance(v, torch.Tensor) for v in conv.packed.values())  # nothing built
    assert (got - reference(x, conv.weight, conv.bias, 1, ((1, 1), (1, 1)), 1, 1, "relu")).abs().max() <= 1e-4


@needs_dnnl
@pytest.mark.skipif(not cpu_has_fast_bf16(), reason="no native bf16 on this CPU: the runtime keeps fp32")
def test_a_built_convolution_in_bf16_stays_within_bf16_rounding():
    x = inputs(1, 32, 24, 24)
    g = torch.Generator().manual_seed(4)
    w, b = torch.randn(64, 32, 3, 3, generator=g) * 0.1, torch.randn(64, generator=g)
    got = dnnl.Convolution(w, b, x.bfloat16(), 1, ((1, 1), (1, 1)), 1, 1, "relu")(x.bfloat16())
    want = reference(x.bfloat16(), w.bfloat16(), b, 1, ((1, 1), (1, 1)), 1, 1, "relu")
    assert got.dtype == torch.bfloat16
    assert (got.float() - want).abs().max() <= 2e-2 * want.abs().max()


@needs_dnnl
@pytest.mark.skipif(not cpu_has_fast_bf16(), reason="no native bf16 on this CPU: the runtime keeps fp32")
@pytest.mark.parametrize("k, stride, padding", [(3, 1, ((1, 1), (1, 1))), (5, 2, ((1, 2), (1, 2)))])
def test_a_bf16_depthwise_convolution_takes_a_bf16_bias_and_the_brdgmm_kernel(k, stride, padding):
    x = inputs(1, 48, 20, 20).bfloat16()
    g = torch.Generator().manual_seed(6)
    w, b = torch.randn(48, 1, k, k, generator=g) * 0.3, torch.randn(48, generator=g)
    conv = dnnl.Convolution(w, b, x, stride, padding, 1, 48, "relu6")
    # with an fp32 bias oneDNN 3.2 chose its slower jit_dw kernel (1.4-1.8x the time at stride 1)
    assert conv.implementation.startswith("brdgmm"), conv.implementation
    want = reference(x, w.bfloat16(), b.bfloat16().float(), stride, padding, 1, 48, "relu6")
    got = conv(x)
    assert got.dtype == torch.bfloat16
    assert (got.float() - want).abs().max() <= 2e-2 * want.abs().max()


def canvas(shapes, seed=0):
    return pack([prepare(grey_photo(h, w, seed + i), 96) for i, (h, w) in enumerate(shapes)])


@needs_dnnl
def test_the_runtime_builds_its_convolutions_and_agrees_with_pytorchs_call():
    model = random_model()
    on, off = OptimizedRuntime(model, CPU, "fp32"), OptimizedRuntime(model, CPU, "fp32")
    for conv in off.net._convs():
        conv.direct = False
    L = canvas([(64, 96), (64, 96), (64, 96)])
    a, b, base = on.run(L), off.run(L), BaselineRuntime(model, CPU).run(L)
    built = [c for c in on.net._convs()
             if any(isinstance(v, dnnl.Convolution) and not v.generic for v in c.packed.values())]
    ran = [c for c in on.net._convs() if c.packed]  # the convolutions this forward called
    assert len(ran) > 40 and len(built) >= len(ran) - 3  # nearly all through a built primitive (a few tiny
    assert any(c.tf_same for c in built)  # shapes have only generic kernels); stride-2 "same" with k x k kernels
    assert np.abs(a - base).max() <= AGREEMENT["fp32"].max_abs
    assert np.abs(a - b).max() <= AGREEMENT["fp32"].max_abs


def test_without_the_library_the_runtime_keeps_pytorchs_call(monkeypatch):
    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    lib, why = dnnl._load.__wrapped__()
    assert lib is None and why is not None and dnnl.INSTALL in why
    monkeypatch.setattr(dnnl, "missing", lambda: why)
    model = random_model()
    opt = OptimizedRuntime(model, CPU, "fp32")
    assert not any(c.direct for c in opt.net._convs())
    L = canvas([(64, 64)])
    assert np.abs(opt.run(L) - BaselineRuntime(model, CPU).run(L)).max() <= AGREEMENT["fp32"].max_abs


@needs_dnnl
def test_one_built_convolution_serves_two_threads_at_once():
    w, b = torch.randn(32, 16, 3, 3) * 0.2, torch.randn(32)
    conv = FConv(w.contiguous(memory_format=CL), b, 1, 1, act="relu", fused=True, direct=True)
    xs = [inputs(1, 16, 48, 48, seed=s) for s in range(2)]
    wants = [reference(x, w, b, 1, ((1, 1), (1, 1)), 1, 1, "relu") for x in xs]
    errors: list[float] = []

    def work(i):
        for _ in range(30):
            errors.append(float((conv(xs[i]) - wants[i]).abs().max()))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 60 and max(errors) <= 1e-4 * max(float(w.abs().max()) for w in wants)


@needs_dnnl
def test_a_shape_oneDNN_has_only_a_generic_kernel_for_takes_pytorchs_call(monkeypatch):
    """Where its fast kernels do not apply (a kernel wider than a tiny input) oneDNN falls back to a generic one;
    those ran 10-20x slower than PyTorch's call, so FConv keeps PyTorch's for that shape.
    """
    w, b = torch.randn(8, 8, 3, 3) * 0.2, torch.randn(8)
    x = inputs(1, 8, 6, 6)
    implementation = dnnl.Convolution(w, b, x, 1, ((1, 1), (1, 1)), 1, 1, "relu").implementation
    monkeypatch.setattr(dnnl, "GENERIC", (implementation,))  # this CPU's kernel for it counts as generic
    conv = FConv(w.contiguous(memory_format=CL), b, 1, 1, act="relu", fused=True, direct=True)
    got = conv(x)
    built = [v for v in conv.packed.values() if isinstance(v, dnnl.Convolution)]
    assert len(built) == 1 and built[0].generic  # built once, remembered, not used
    assert any(isinstance(v, torch.Tensor) for v in conv.packed.values())  # PyTorch's packed weight ran it
    assert (got - reference(x, w, b, 1, ((1, 1), (1, 1)), 1, 1, "relu")).abs().max() <= 1e-4 * got.abs().max()


def test_the_switch_turns_the_primitives_off_and_the_bench_says_which_call_runs(monkeypatch):
    from engine.bench.hardware import cpu_info

    monkeypatch.setenv(dnnl.SWITCH, "0")
    lib, why = dnnl._load.__wrapped__()
    assert lib is None and why is not None and dnnl.SWITCH in why
    monkeypatch.setattr(dnnl, "missing", lambda: why)
    assert f"convolutions: PyTorch's oneDNN call ({why})" in cpu_info().line()


@needs_dnnl
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_built_resampling_is_pytorchs_bilinear_upsampling_by_two(dtype):
    if dtype == torch.bfloat16 and not cpu_has_fast_bf16():
        pytest.skip("no native bf16 on this CPU: the runtime keeps fp32")
    x = inputs(2, 24, 9, 13).to(dtype)
    dst = torch.empty(2, 24, 18, 26, dtype=dtype).contiguous(memory_format=CL)
    up = dnnl.Resampling(x, dst)
    assert not up.generic, up.implementation
    want = F.interpolate(x.float(), size=(18, 26), mode="bilinear", align_corners=False)
    tol = 1e-5 if dtype == torch.float32 else 1e-2 * float(want.abs().max())  # one bf16 rounding step
    assert (up(x, dst).float() - want).abs().max() <= tol


@needs_dnnl
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_built_softmax_over_the_channels_writes_fp32_in_the_bins_last_layout(dtype):
    if dtype == torch.bfloat16 and not cpu_has_fast_bf16():
        pytest.skip("no native bf16 on this CPU: the runtime keeps fp32")
    logits = (inputs(2, 103, 8, 10) * 4).to(dtype)
    probs = torch.empty(2, 8, 10, 103)  # NHWC, as the read-out's matmul takes it
    dnnl.Softmax(logits, probs.permute(0, 3, 1, 2))(logits, probs.permute(0, 3, 1, 2))
    want = torch.softmax(logits.float(), dim=1).permute(0, 2, 3, 1)
    assert (probs - want).abs().max() <= 1e-6
    assert torch.allclose(probs.sum(-1), torch.ones(2, 8, 10), atol=1e-5)


@needs_dnnl
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_each_set_of_built_primitives_gives_the_runtimes_colours(precision):
    if precision == "bf16" and not cpu_has_fast_bf16():
        pytest.skip("no native bf16 on this CPU: the runtime keeps fp32")
    from engine.runtimes.fused import DIRECT_KINDS

    model = random_model()
    opt = OptimizedRuntime(model, CPU, precision)
    L = canvas([(64, 96), (64, 96)])
    opt.net.set_direct([])
    plain = opt.run(L)
    for kinds in ([], ["convolutions"], ["resampling"], ["softmax"], list(DIRECT_KINDS)):
        opt.net.set_direct(kinds)
        assert opt.net.direct == frozenset(kinds)
        assert any(c.direct for c in opt.net._convs()) == ("convolutions" in kinds)
        bound = AGREEMENT["fp32"].max_abs if precision == "fp32" else 2.0  # bf16: a rounding step through the tail
        assert np.abs(opt.run(L) - plain).max() <= bound, kinds
    # fp32 keeps PyTorch's upsampling and softmax (no gain in the whole forward there)
    assert {type(b) for b in opt.net._built.values()} == ({dnnl.Resampling, dnnl.Softmax} if precision == "bf16"
                                                         else set())
    opt.release_memory()
    assert not opt.net._built
    with pytest.raises(ValueError):
        opt.net.set_direct(["winograd"])


@needs_dnnl
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_primitive_that_cannot_be_built_leaves_the_work_to_pytorch(monkeypatch, precision):
    """A kind this CPU's oneDNN 3.2 has no kernel for answers 'unimplemented': that convolution, resampling or
    softmax goes back to PyTorch's call for good, with the same colours.
    """
    if precision == "bf16" and not cpu_has_fast_bf16():
        pytest.skip("no native bf16 on this CPU: nothing bf16 is built")

    def refuse(*args, **kwargs):
        raise dnnl.DnnlError("oneDNN: failed (status 3)")

    model = random_model()
    L = canvas([(64, 64)])
    plain = OptimizedRuntime(model, CPU, precision)
    plain.net.set_direct([])
    want = plain.run(L)
    opt = OptimizedRuntime(model, CPU, precision)
    for kind in ("Convolution", "Resampling", "Softmax"):
        monkeypatch.setattr(dnnl, kind, refuse)
    bound = AGREEMENT["fp32"].max_abs if precision == "fp32" else 1e-3
    assert np.abs(opt.run(L) - want).max() <= bound
    ran = [c for c in opt.net._convs() if c.packed]
    assert len(ran) > 40 and not any(c.direct for c in ran)
    if precision == "bf16":  # the resampling and the softmax (bf16 only) gave up too
        assert not opt.net.direct & {"resampling", "softmax"}
    assert np.abs(opt.run(L) - want).max() <= bound  # and again, without trying anew


def test_bf16_where_it_is_not_native_runs_without_the_primitives_oneDNN_has_no_kernel_for():
    """On a CPU without AVX-512 BF16 (imitated: oneDNN held to AVX2) bf16 can still be asked for; oneDNN 3.2 has no
    bf16 kernels there, so nothing bf16 is built and the runtime gives PyTorch's bf16.
    """
    import os
    import subprocess
    import sys

    from helpers import ROOT

    code = (
        "import sys, torch, numpy as np; sys.path.insert(0, 'tests'); from helpers import random_model, grey_photo\n"
        "from engine.colorizer import pack, prepare; from engine.runtimes.optimized import OptimizedRuntime\n"
        "L = pack([prepare(grey_photo(64, 64), 96)])\n"
        "opt = OptimizedRuntime(random_model(), torch.device('cpu'), 'bf16')\n"
        "a = opt.run(L); opt.net.set_direct([]); b = opt.run(L)\n"
        "print(sorted(opt.net.direct), float(np.abs(a - b).max()))\n"
        "opt.net.set_direct(['convolutions', 'resampling', 'softmax']); print(sorted(opt.net.direct))\n")
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    first, second = run.stdout.splitlines()[-2:]
    assert float(first.split()[-1]) == 0.0  # the same bf16 colours with and without the primitives
    if dnnl.missing() is None:
        assert second == "['convolutions']"  # resampling and softmax are bf16 only: not built here


def test_another_version_of_the_wheel_is_not_loaded(monkeypatch):
    class Other:
        version = "2024.2.0"
        files = ()

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Other())
    lib, why = dnnl._load.__wrapped__()
    assert lib is None and why is not None and "2024.2.0" in why and dnnl.VERSION in why
