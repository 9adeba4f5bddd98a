"""An inverted-residual block over strips of rows equals the block in one pass, at every strip height."""

import pytest
import torch
from helpers import random_model

from engine.runtimes import strips
from engine.runtimes.folded import CL
from engine.runtimes.fused import FusedCVUNet


@pytest.fixture(scope="module")
def net():
    return FusedCVUNet(random_model(), torch.float32, torch.device("cpu"))


def one_pass(b, x):
    y = b.project(b.dw(b.expand(x)))
    return y.add_(x) if b.residual else y


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1000])
def test_a_block_over_strips_equals_the_block_in_one_pass(net, rows):
    torch.manual_seed(rows)
    kinds = set()
    for b in net.blocks[1:7]:  # strides 1 and 2, kernels 3 and 5 (4 and 6 once folded), with and without residual
        assert b.expand is not None
        cin = b.expand.weight.shape[1]
        x = torch.randn(2, cin, 38, 22).contiguous(memory_format=CL)  # heights no stride divides evenly
        want = one_pass(b, x)
        got = torch.full_like(want, float("nan"))
        strips.block_in_strips(b, x, got, rows)
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
        kinds.add((b.dw.stride, b.dw.weight.shape[-1], b.residual))
    assert {s for s, _, _ in kinds} == {1, 2} and {r for _, _, r in kinds} == {True, False}


def test_the_runtime_takes_strips_for_big_blocks_and_gets_the_same_colours(net, monkeypatch):
    from engine.runtimes.pool import BufferPool

    L = torch.rand(1, 1, 256, 320) * 100
    calls = []
    real = strips.block_in_strips
    monkeypatch.setattr("engine.runtimes.fused.block_in_strips", lambda *a: (calls.append(a[-1]), real(*a)))
    monkeypatch.setattr(strips, "STRIP_BYTES", 64 * 2**10)  # strips of a few rows at this small size
    outs = []
    for on in (False, True):
        monkeypatch.setattr(net, "strips", on)
        with torch.inference_mode(), BufferPool().scope() as scope:
            outs.append(net.forward(L, scope).clone())
    assert calls and min(calls) < 128 // 2
    torch.testing.assert_close(outs[1], outs[0], atol=1e-4, rtol=1e-4)
