"""An inverted-residual block over horizontal strips, so its expanded activations stay in the caches.

At half and quarter size the expand 1x1 writes the block's largest tensor (block 1 of Lite0: 96 channels at
256 x 256, 25 MB a photo in fp32) only for the depthwise convolution to read it back: both run at memory speed.
Over strips of output rows the expanded strip is a few MB, written and read while it is still cached; OpenVINO
fuses the same pair for the same reason. Each strip's depthwise convolution reads the rows it needs, halo
included; rows outside the photo are the convolution's own zero padding. A symmetric row padding sometimes
computes a few rows too many at a strip's edge: those are dropped, never used.
"""

from __future__ import annotations

import torch

from .folded import CL, FBlock

STRIP_BYTES = 4 * 2**20  # the expanded strip's size: within a core pair's share of L3, a few strips a photo


def strip_rows(block: FBlock, width: int, dtype: torch.dtype) -> int:
    """Output rows per strip for a photo ``width`` pixels wide at the block's input."""
    assert block.expand is not None
    row_bytes = block.expand.weight.shape[0] * width * torch.finfo(dtype).bits // 8
    return max(1, STRIP_BYTES // (row_bytes * block.dw.stride))


def block_in_strips(block: FBlock, x: torch.Tensor, out: torch.Tensor, rows: int) -> None:
    """``out`` = the block of ``x`` (expand, depthwise, project, residual add), a strip of ``rows`` rows at a time."""
    assert block.expand is not None
    dw = block.dw
    assert dw.dilation == 1, "strips assume an undilated depthwise convolution"
    k, s, p = dw.weight.shape[-1], dw.stride, dw.padding
    height = x.shape[2]
    out_rows = out.shape[2]
    for i in range(x.shape[0]):
        xi = x[i : i + 1]
        for r0 in range(0, out_rows, rows):
            r1 = min(out_rows, r0 + rows)
            first, end = r0 * s - p, (r1 - 1) * s - p + k  # the input rows the strip reads, padding included
            lo, hi = max(0, first), min(height, end)
            top, bottom = lo - first, end - hi  # rows of zero padding above and below
            # One symmetric row padding: at least top and bottom, and a multiple of the stride past top,
            # so that an output row starts where row r0 does.
            pad = top + s * -(-max(0, bottom - top) // s)
            skip = (pad - top) // s
            expanded = block.expand(xi[:, :, lo:hi])
            d = dw(expanded, row_padding=pad)[:, :, skip : skip + r1 - r0]
            if not d.is_contiguous(memory_format=CL):
                d = d.contiguous(memory_format=CL)
            y = block.project.plus(d, xi[:, :, r0:r1]) if block.residual else block.project(d)
            out[i : i + 1, :, r0:r1].copy_(y)
