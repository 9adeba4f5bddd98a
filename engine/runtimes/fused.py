"""The CV_UNet as folded tensors and a hand-written forward over a buffer pool.

What it does differently from the ``nn.Module``, and why:
- BatchNorm folded into the convolutions, activations in place: fewer full-size passes.
- On the CPU the convolutions (and in bf16 the upsampling and the softmax) as oneDNN primitives built once per
  shape (``dnnl.py``, ``set_direct``): no per-call primitive descriptor, as PyTorch's call builds.
- TF "same" padding of the stride-2 convolutions: the built primitives take it as it is; PyTorch's call takes a
  kernel one tap larger with a zero first row and column and symmetric padding, exact for even sizes, which
  saves a padded copy of the largest activations (3x faster for those layers than pad + conv).
- Skip connections without ``torch.cat``: each decoder stage owns a concat buffer from the
  pool; the upsampler's result is copied into its slice and the skip feature into the other.
  The residual adds are a post-op of the convolution.
- Without hints, the convolutions that read the (then zero) hint inputs run without them.
- ASPP image pooling folded into a per-sample bias of the projection (no broadcast copy).
- The blocks at stride 2 and 4 (and on the CPU the tail) run over chunks of photos; on the CPU a chunk's largest
  tensor stays under glibc's mmap threshold, so the heap reuses it instead of the kernel mapping it afresh.
- Reduced precision for the body (on a CPU in bf16 the head and the refinement too); the softmax, the
  annealed-mean read-out and the final add stay fp32.
- The read-out (``readout.Readout``: temperature, doubt pull, gain) folded in: 1/T into the head's
  weights, the annealed mean and E|ab|^2 in one matmul. The settings are read when built; it equals
  ``Readout.apply`` within fp32 rounding (tests/engine/test_runtimes.py).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Collection

import torch
import torch.nn.functional as F

from ..color import AB_RANGE
from ..devices import cpu_has_fast_bf16
from ..encoder import ConvBN
from ..model import ASPP, L_SCALE, L_SHIFT, CVUNet, hint_features
from . import dnnl
from .folded import CL, FBlock, FConv, FDecoder, fold, remember
from .pool import Scope
from .strips import block_in_strips, strip_rows

log = logging.getLogger(__name__)

HIGHRES_CHUNK_PIXELS = 2 * 512 * 512  # on CUDA, photos per chunk in the high-resolution blocks: this many pixels
# On the CPU a chunk's largest tensor stays under glibc's mmap threshold (at most 32 MiB on 64-bit): above it every
# allocation is mapped fresh, each call paying page faults and zeroing (docs/experiments, "Chunks sized by bytes";
# measured with glibc on Linux; elsewhere it only makes fp32 chunks smaller). The blocks after the chunks still grow
# with the batch: block 4's expand in fp32 at 512 px passes the threshold above batch 8.
CPU_CHUNK_BYTES = 30 * 2**20
MOMENT_COLUMNS = 16  # the read-out's matmul width (ab, |ab|^2, zeros)
DIRECT_KINDS = ("convolutions", "resampling", "softmax")  # what runs as oneDNN primitives built once (dnnl.py)
BUILT_OTHERS = 16  # resampling and softmax primitives kept (by shape and layout), the most recently used


class FusedCVUNet:
    """The CV_UNet as folded tensors and a hand-written forward over a buffer pool."""

    def __init__(self, model: CVUNet, dtype: torch.dtype, device: torch.device) -> None:
        model = model.eval()
        enc = model.encoder
        self.dtype, self.device = dtype, device
        body = lambda c: c.to(dtype, device)  # noqa: E731
        exact = lambda c: c.to(torch.float32, device)  # noqa: E731
        self.stem = body(fold(enc.stem()))  # a hinted model's stem reads 1 + hint_channels inputs
        self.hint_channels = model.config.hint_channels
        self.stem_plain = self.stem.first_inputs(1)  # without hints the hint map is zeros: L alone
        self.blocks: list[FBlock] = []
        for b in enc.blocks():
            *expand, dw, project = [body(fold(c)) for c in b.convs()]
            self.blocks.append(FBlock(expand[0] if expand else None, dw, project, b.residual))
        self.aspp: tuple[list[FConv], FConv, FConv, FConv] | None = None
        if isinstance(model.bottleneck, ASPP):
            a = model.bottleneck
            branches: list[FConv] = []
            for chain in a.branch_convs():
                if len(chain) != 1:  # depthwise-separable branch: two folded convs
                    raise NotImplementedError("separable ASPP is run by the baseline runtime only")
                branches.append(body(fold(chain[0])))
            pool = a.pool_conv()
            proj = fold(a.project.layer())
            width = branches[0].weight.shape[0]
            n_sp = len(branches) * width
            # project(cat(spatial, pooled)) = W_sp @ spatial + (W_pool @ pooled + b): the second
            # term is constant over the image, a per-sample bias.
            proj_sp = FConv(proj.weight[:, :n_sp].contiguous(), proj.bias, act=None)
            proj_pool = FConv(proj.weight[:, n_sp:].contiguous(), None)
            assert pool.conv.bias is not None and pool.bn is None
            pool_fc = FConv(pool.conv.weight.detach().float(), pool.conv.bias.detach().float(), act=pool.act)
            self.aspp = (branches, body(proj_sp), body(pool_fc), body(proj_pool))
        self.decoders: list[FDecoder] = []
        for d in model.decoder_stages():
            conv1 = body(fold(d.conv1.layer()))
            self.decoders.append(FDecoder(d.cin, d.cskip, d.chint, conv1, body(fold(d.conv2.layer())),
                                          conv1.first_inputs(d.cin + d.cskip)))
        self.chint = model.config.decoder_hint_channels  # the hint features' slice at the end of each concat
        readout = model.readout  # read once: the fused forward is ``Readout.apply`` with these settings folded in
        t = readout.temperature
        head = fold(ConvBN(model.head, None, None))
        # softmax(logits / T): fold 1/T into the head.
        # On a CPU in bf16 the head and the refinement run in bf16 too (docs/experiments, "The read-out in bf16");
        # the softmax, its matmul and the final add stay fp32. Elsewhere (fp32, CUDA) they stay fp32.
        tail = body if dtype == torch.bfloat16 and device.type == "cpu" else exact
        self.head = tail(FConv(head.weight / t, head.bias / t if head.bias is not None else None))
        centres = model.bins.detach().float()
        self.pull = float(readout.doubt_pull)
        if self.pull:  # a third column, |ab|^2: the same matmul gives E|ab|^2 for the ab variance
            centres = torch.cat([centres, (centres * centres).sum(dim=1, keepdim=True)], dim=1)
        # Q x 16: ab, |ab|^2 with the doubt pull, then zero columns. A matmul 3 columns wide takes a slow
        # kernel (1.4 ms at 512 px on an EPYC core pair); 16 wide, 0.5 ms, and the same first columns.
        self.centres = F.pad(centres, (0, MOMENT_COLUMNS - centres.shape[1])).contiguous().to(device)
        r1 = fold(ConvBN(model.refine.conv1, None, "relu"))
        r1.weight = r1.weight.clone()
        r1.weight[:, :2] *= 1.0 / AB_RANGE  # the refine sees ab / AB_RANGE: fold the scale in
        r1.padding = 1
        r2 = fold(ConvBN(model.refine.conv2, None, None))
        r2.weight, r2.padding = r2.weight * AB_RANGE, 1
        r2.bias = r2.bias * AB_RANGE if r2.bias is not None else None
        self.refine1, self.refine2 = tail(r1), tail(r2)
        self.tail_dtype = self.refine1.weight.dtype
        self.skip_blocks = enc.skip_blocks
        self.c1 = self.blocks[self.skip_blocks[0]].project.weight.shape[0]
        self.refine1_plain = self.refine1.first_inputs(2 + self.c1)
        self.gain = float(readout.chroma_gain)
        self.chunk_pixels = HIGHRES_CHUNK_PIXELS
        self.chunk_bytes = CPU_CHUNK_BYTES
        self.first_full = self._first_full_block()
        self.chunk_bytes_per_pixel = self._widest_per_pixel()
        self.strips = False  # the high-resolution blocks over strips of rows (strips.py): no gain shown, off
        self._built: OrderedDict[tuple[object, ...], dnnl.Resampling | dnnl.Softmax] = OrderedDict()
        self.direct: frozenset[str] = frozenset()
        self.set_direct(DIRECT_KINDS)

    def forward(self, L: torch.Tensor, scope: Scope, out: torch.Tensor | None = None,
                hints: torch.Tensor | None = None) -> torch.Tensor:
        """L: N x 1 x H x W float32 on the device (hints: N x 3 x H x W or None). Returns N x 2 x H/2 x W/2 float32.

        Without hints the hint inputs would be zeros: the convolutions that read them run on the other
        inputs alone (``first_inputs``), the same sums without the zero fills or their share of the work.
        """
        n, _, h, w = L.shape
        SKIP_BLOCKS = self.skip_blocks  # noqa: N806 - indices of the encoder blocks whose outputs are skips
        plain = hints is None
        hinted = self.hint_channels > 0 and not plain  # the stem reads the hint map
        chint = 0 if plain else self.chint
        # Concat buffers for the decoder stages at strides 16, 8, 4, and for the refinement (stride 2).
        cats = []
        for d, s in zip(self.decoders, (16, 8, 4), strict=True):
            cats.append(scope.acquire((n, d.cin + d.cskip + chint, h // s, w // s), self.dtype, self.device, True))
        refine_buf = scope.acquire((n, 2 + self.c1 + chint, h // 2, w // 2), self.tail_dtype, self.device, True)
        skip_slots: dict[int, torch.Tensor] = {
            SKIP_BLOCKS[3]: cats[0][:, self.decoders[0].cin : self.decoders[0].cin + self.decoders[0].cskip],
            SKIP_BLOCKS[2]: cats[1][:, self.decoders[1].cin : self.decoders[1].cin + self.decoders[1].cskip],
            SKIP_BLOCKS[1]: cats[2][:, self.decoders[2].cin : self.decoders[2].cin + self.decoders[2].cskip],
        }
        if chint:  # the hint features go into the last slice of each concat
            assert hints is not None
            for buf in (*cats, refine_buf):
                buf[:, buf.shape[1] - chint :].copy_(hint_features(hints, (buf.shape[2], buf.shape[3])))
        # The blocks that read stride 2 or 4 hold the largest activations (block 1 expands to 96
        # channels at half size): run them a few photos at a time, writing their skips into the
        # full-batch buffers, so peak memory does not grow with the batch (and, on the CPU, no
        # tensor outgrows the heap: see CPU_CHUNK_BYTES).
        first_full = self.first_full
        step = self.photos_per_chunk(h, w)
        gathered: torch.Tensor | None = None  # the chunks' last outputs, for the rest of the encoder
        for c0 in range(0, n, step):
            c1 = min(n, c0 + step)
            x = scope.acquire((c1 - c0, 1 + self.hint_channels if hinted else 1, h, w), self.dtype, self.device, True)
            x[:, :1].copy_(L[c0:c1].mul(L_SCALE).sub_(L_SHIFT))  # CVUNet.normalize; the hint map goes in as it is
            if hinted:
                assert hints is not None
                x[:, 1:].copy_(hints[c0:c1])
            x = (self.stem if hinted else self.stem_plain)(x)
            chunk_slots = {k: v[c0:c1] for k, v in skip_slots.items()}
            for i in range(first_full):
                x = self._block(i, x, chunk_slots, scope)
                if i == SKIP_BLOCKS[0]:
                    refine_buf[c0:c1, 2 : 2 + self.c1].copy_(x)
            if step < n:
                if gathered is None:
                    gathered = scope.acquire((n, *x.shape[1:]), self.dtype, self.device, True)
                gathered[c0:c1].copy_(x)
        if gathered is not None:
            x = gathered
        for i in range(first_full, len(self.blocks)):
            x = self._block(i, x, skip_slots, scope)
        y = self._bottleneck(x, scope)
        for d, cat in zip(self.decoders[:-1], cats[:-1], strict=True):
            self._upsample(y, cat[:, : d.cin], scope)
            y = d.conv2((d.conv1_plain if plain else d.conv1)(cat))
        if out is None:
            out = scope.acquire((n, 2, h // 2, w // 2), torch.float32, self.device)
        # The last decoder stage, the read-out and the refinement (quarter and half size) over the encoder's
        # chunks on the CPU: their full-batch tensors outgrow the caches and the heap. CUDA takes the whole batch.
        tail_chunk = step if self.device.type == "cpu" else n
        for c0 in range(0, n, tail_chunk):
            c1 = min(n, c0 + tail_chunk)
            part = scope if tail_chunk >= n else Scope(scope.pool)  # each chunk's buffers serve the next
            try:
                self._tail(y[c0:c1], cats[-1][c0:c1], refine_buf[c0:c1], out[c0:c1], plain, part)
            finally:
                if part is not scope:
                    part.close()
        return out

    def photos_per_chunk(self, h: int, w: int) -> int:
        """How many photos of h x w the high-resolution blocks and (on the CPU) the tail take at a time.

        The CPU counts bytes (what glibc's heap reuses depends on a tensor's size, so fp32 chunks are half bf16's);
        CUDA counts pixels, for peak memory alone.
        """
        if self.device.type == "cpu":
            return max(1, int(self.chunk_bytes // (h * w * self.chunk_bytes_per_pixel)))
        return max(1, self.chunk_pixels // (h * w))

    def _first_full_block(self) -> int:
        """The first block to take the whole batch. On the CPU, the first whose input is at stride 8: before it
        a batch's tensors outgrow the heap (block 3's expand: 72 MB for 8 photos in fp32). On CUDA the blocks up to
        the stride-4 skip, as measured there by design only.
        """
        if self.device.type != "cpu":
            return self.skip_blocks[1] + 1
        s = self.stem.stride
        for i, b in enumerate(self.blocks):
            if s >= 8:
                return i
            s *= b.dw.stride
        return len(self.blocks)

    def _widest_per_pixel(self) -> float:
        """Bytes per input pixel of the largest tensor a chunk allocates outside the pool (pooled buffers are reused,
        so only these are allocated afresh each call). Keep in step with ``forward``, ``_block`` and ``_tail``.
        """
        body, tail = self.dtype.itemsize, self.tail_dtype.itemsize
        s = self.stem.stride
        widths = [self.stem.weight.shape[0] / s**2 * body]
        for b in self.blocks[: self.first_full]:
            if b.expand is not None:
                widths.append(b.expand.weight.shape[0] / s**2 * body)
            s *= b.dw.stride
            widths.append(b.project.weight.shape[0] / s**2 * body)
        widths += [self.decoders[-1].conv1.weight.shape[0] / 16 * body,  # the last stage runs at a quarter size
                   self.head.weight.shape[0] / 16 * 4,  # the logits' fp32 NHWC copy
                   self.refine1.weight.shape[0] / 4 * tail]
        return max(widths)

    def release_packed(self) -> None:
        """Drop every convolution's packed weights and the built primitives (they are made again on the next call)."""
        for conv in self._convs():
            conv.packed.clear()
        self._built.clear()

    def set_direct(self, kinds: Collection[str]) -> None:
        """Which of ``DIRECT_KINDS`` run as oneDNN primitives built once, where the library loads and on the CPU (the
        convolutions only where they are fused); the rest take PyTorch's calls.
        """
        unknown = set(kinds) - set(DIRECT_KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}: use {', '.join(DIRECT_KINDS)}")
        available = self.device.type == "cpu" and dnnl.missing() is None
        self.direct = frozenset(kinds) if available else frozenset()
        if self.dtype == torch.bfloat16 and not cpu_has_fast_bf16():  # oneDNN 3.2 has no bf16 kernels there
            self.direct = self.direct & {"convolutions"}
        for conv in self._convs():
            conv.direct = "convolutions" in self.direct and conv.fused

    def _primitive(self, kind: str, x: torch.Tensor, dst: torch.Tensor) -> bool:
        """``kind`` ("resampling" or "softmax") from ``x`` into ``dst``, its primitive built on first use for these
        shapes and layouts. False (nothing done) where oneDNN has only a generic kernel for them, or none: the caller
        takes PyTorch's call (for good where there is none).
        """
        key = (kind, x.dtype, *x.shape, *x.stride(), dst.dtype, *dst.shape, *dst.stride())
        try:
            built = remember(self._built, key, lambda: (dnnl.Resampling if kind == "resampling" else dnnl.Softmax)(
                x, dst), BUILT_OTHERS)
        except (dnnl.DnnlError, ValueError) as err:
            log.warning("%s on %s: PyTorch's call from now on (%s)", kind, tuple(x.shape), err)
            self.direct = self.direct - {kind}
            return False
        if built.generic:
            return False
        built(x, dst)
        return True

    def _upsample(self, x: torch.Tensor, dst: torch.Tensor, scope: Scope) -> None:
        """Bilinear upsampling of ``x`` into ``dst`` (a channel slice of a concat buffer).

        With the primitives in bf16, into a dense bf16 buffer and one copy into the slice: oneDNN resamples into a
        slice only with its generic kernel (500x slower), and densely 3-5x faster than PyTorch's route through fp32.
        In fp32 PyTorch's route stays: the whole forward showed no gain (docs/experiments, "The decoder's upsampling").
        """
        if "resampling" in self.direct and x.dtype == torch.bfloat16 and dnnl.nhwc_strides(x) is not None:
            dense = scope.acquire(tuple(dst.shape), x.dtype, x.device, True)
            if self._primitive("resampling", x, dense):
                dst.copy_(dense)
                return
        _upsample_into(x, dst, scope)

    def _convs(self) -> list[FConv]:
        convs = [self.stem, self.stem_plain, self.head, self.refine1, self.refine2, self.refine1_plain]
        for b in self.blocks:
            convs += [c for c in (b.expand, b.dw, b.project) if c is not None]
        for d in self.decoders:
            convs += [d.conv1, d.conv2, d.conv1_plain]
        if self.aspp is not None:
            branches, *rest = self.aspp
            convs += [*branches, *rest]
        return convs

    def _tail(self, y: torch.Tensor, cat: torch.Tensor, refine_buf: torch.Tensor, out: torch.Tensor, plain: bool,
              scope: Scope) -> None:
        """The last decoder stage, head, read-out and refinement for some photos, written into ``out``."""
        d = self.decoders[-1]
        self._upsample(y, cat[:, : d.cin], scope)
        y = d.conv2((d.conv1_plain if plain else d.conv1)(cat))
        logits = self.head(y.to(self.tail_dtype))
        n, q, h, w = logits.shape
        probs = scope.acquire((n, h, w, q), torch.float32, self.device)  # NHWC: the bins last, for the matmul
        # oneDNN's softmax reads the bf16 logits and writes fp32 (0.97 against 1.38 ms at 128 px, the cast
        # included); in fp32 PyTorch's was the faster (1.17 against 1.76 ms)
        if not ("softmax" in self.direct and logits.dtype == torch.bfloat16
                and self._primitive("softmax", logits, probs.permute(0, 3, 1, 2))):
            # Softmax over bins along the last axis of the NHWC view: no layout change, no NCHW kernel.
            # (A channels_last ``out`` for _softmax.out over dim 1 is wrong in torch 2.13 on the CPU.)
            nhwc = logits.permute(0, 2, 3, 1).to(torch.float32, memory_format=torch.contiguous_format)
            torch.ops.aten._softmax.out(nhwc, -1, False, out=probs)
        moments = scope.acquire((n, h, w, MOMENT_COLUMNS), torch.float32, self.device)
        torch.matmul(probs, self.centres, out=moments)
        ab_up = _upsample_into(moments[..., :2].permute(0, 3, 1, 2).contiguous(), refine_buf[:, :2], scope)
        ab = self.refine2((self.refine1_plain if plain else self.refine1)(refine_buf))
        torch.add(ab, ab_up, out=out)
        if self.pull:  # readout.doubt_scale of the variance E|ab|^2 - |E ab|^2, at half size
            variance = (moments[..., 2:3] - moments[..., :2].square().sum(dim=-1, keepdim=True)).clamp_min_(0.0)
            scale = (variance.mul_(self.pull / AB_RANGE**2).add_(1.0).reciprocal_()).permute(0, 3, 1, 2)
            out.mul_(F.interpolate(scale, size=out.shape[-2:], mode="bilinear", align_corners=False))
        if self.gain != 1.0:
            out.mul_(self.gain)

    def _block(self, i: int, x: torch.Tensor, skip_slots: dict[int, torch.Tensor], scope: Scope) -> torch.Tensor:
        b = self.blocks[i]
        rows = strip_rows(b, x.shape[3], self.dtype) if b.expand is not None and self.strips else 0
        if rows and x.shape[2] // b.dw.stride >= 2 * rows:  # big enough for two strips or more (strips.py)
            s, p, k = b.dw.stride, b.dw.padding, b.dw.weight.shape[-1]
            size = [(x.shape[d] + 2 * p - k) // s + 1 for d in (2, 3)]
            y = torch.empty((x.shape[0], b.project.weight.shape[0], *size), dtype=self.dtype, device=self.device,
                            memory_format=CL)  # not pooled: a chunk's output is freed once the next block has read it
            block_in_strips(b, x, y, rows)
        else:
            y = b.expand(x) if b.expand is not None else x
            y = b.project.plus(b.dw(y), x) if b.residual else b.project(b.dw(y))
        slot = skip_slots.get(i)
        if slot is not None:  # a skip feature is copied into its slice of the decoder's concat buffer; the
            slot.copy_(y)  # next block reads the dense tensor (a channel slice as input costs a reorder)
        return y

    def _bottleneck(self, x: torch.Tensor, scope: Scope) -> torch.Tensor:
        if self.aspp is None:
            return x
        branches, proj_sp, pool_fc, proj_pool = self.aspp
        n, _, h, w = x.shape
        width = branches[0].weight.shape[0]
        buf = scope.acquire((n, width * len(branches), h, w), self.dtype, self.device, True)
        for k, br in enumerate(branches):
            buf[:, k * width : (k + 1) * width].copy_(br(x))
        pooled = pool_fc(x.mean(dim=(2, 3), keepdim=True))
        y = proj_sp(buf)
        y.add_(proj_pool(pooled))  # broadcast over H x W
        return y.relu_()


def _upsample_into(x: torch.Tensor, dst: torch.Tensor, scope: Scope) -> torch.Tensor:
    """Bilinear upsampling of ``x`` into ``dst`` (a channel slice of a concat buffer); returns the result, dense
    fp32 on the CPU.

    On the CPU into a dense fp32 buffer, then one copy into the slice: upsampling straight into a strided slice,
    or in bf16, takes slow kernels there (0.58 ms against 1.05 ms for 96 channels at 128 px).
    """
    n, c, h, w = dst.shape
    if x.device.type != "cpu":
        torch.ops.aten.upsample_bilinear2d.out(x, [h, w], False, None, None, out=dst)
        return dst
    dense = scope.acquire((n, c, h, w), torch.float32, x.device, x.is_contiguous(memory_format=CL))
    torch.ops.aten.upsample_bilinear2d.out(x.float(), [h, w], False, None, None, out=dense)
    dst.copy_(dense)
    return dense

