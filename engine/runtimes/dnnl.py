"""oneDNN primitives (convolutions, resampling, softmax) built once per input shape and run through its C API.

PyTorch's oneDNN call (``mkldnn._convolution_pointwise``) builds a primitive descriptor on every call: about
40 us a convolution outside its arithmetic, ~60 convolutions a photo. Here each convolution's primitive, its
weights in oneDNN's own layout and its memory objects are made once per input shape; a call sets two or three
data pointers and executes. The library is the ``onednn-cpu-gomp`` wheel (oneDNN 3.2, GNU OpenMP): it shares
PyTorch's ``libgomp`` and so its thread count. Where the wheel is missing or cannot load, the runtime keeps
PyTorch's call (``missing()`` says why).

A stride-2 convolution takes TensorFlow's uneven "same" padding as it is (oneDNN has separate padding before
and after), so it runs its own k x k kernel, not the (k+1) x (k+1) one PyTorch's symmetric padding needs.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.metadata
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import torch

DIST = "onednn-cpu-gomp"
VERSION = "2023.2.0"  # oneDNN 3.2, whose C API constants are below; pinned in pyproject.toml
INSTALL = f"pip install {DIST}=={VERSION}"
SWITCH = "COLORIZER_ONEDNN"  # 0: PyTorch's call for every convolution (a way around a fault in the library)

# Constants of oneDNN 3.2's C API (dnnl_types.h, dnnl_common_types.h).
_F32, _BF16 = 3, 2
_TAG_ANY, _TAG_A, _TAG_ABCD, _TAG_ABCDE = 1, 2, 5, 6
_FORWARD_INFERENCE, _CONV_DIRECT = 96, 1
_ELTWISE_RELU, _ELTWISE_CLIP, _BINARY_ADD = 0x20, 46, 0x1FFF0
_RESAMPLING_LINEAR, _SOFTMAX_ACCURATE = 0x2FFF1, 0x30000
_ENGINE_CPU, _STREAM_DEFAULT = 1, 1
_QUERY_WEIGHTS_MD, _QUERY_IMPL_INFO = 131, 8
_ARG_SRC, _ARG_SRC_1, _ARG_DST, _ARG_WEIGHTS, _ARG_BIAS = 1, 2, 17, 33, 41
_ARG_POST_OP_0 = 32768  # DNNL_ARG_ATTR_MULTIPLE_POST_OP(0)

GENERIC = ("ref", "x64:gemm", "gemm")  # implementations that are oneDNN's generic fallbacks, not its fast kernels

_P = ctypes.c_void_p
_Dims = ctypes.c_int64 * 12  # dnnl_dims_t


class _Arg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _P)]  # dnnl_exec_arg_t


class DnnlError(RuntimeError):
    pass


_local = threading.local()  # ``tape``: where this thread's executed primitives are recorded (``recording``)


@contextlib.contextmanager
def recording(tape: list[object]) -> Iterator[None]:
    """Each primitive executed on this thread meanwhile is also appended to ``tape``, bound to the tensors it ran on
    (``Bound``): a forward recorded for replay (``replay.py``).
    """
    _local.tape = tape
    try:
        yield
    finally:
        _local.tape = None


@functools.cache
def _load() -> tuple[Any, str | None]:
    """(the library with its engine and stream, None) or (None, why not)."""
    if os.environ.get(SWITCH, "1") == "0":
        return None, f"turned off ({SWITCH}=0)"
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        return None, f"{DIST} is not installed ({INSTALL})"
    if dist.version != VERSION:  # the C API's constants here are 3.2's
        return None, f"{DIST} {dist.version} is installed; this code is written for {VERSION}"
    files = [f for f in dist.files or () if f.name == "libdnnl.so.3"]
    if not files:
        return None, f"{DIST} has no libdnnl.so.3 for this system"
    try:
        lib = ctypes.CDLL(str(dist.locate_file(files[0])), mode=ctypes.RTLD_LOCAL)
        if len(gomps := _openmp_libraries()) > 1:  # a torch whose libgomp has another name: two thread pools
            return None, f"it would run a second OpenMP runtime beside PyTorch's ({', '.join(gomps)})"
        lib.dnnl_primitive_desc_query_md.restype = _P
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        lib.dnnl_memory_desc_get_size.argtypes = [_P]
        lib.dnnl_memory_set_data_handle.argtypes = [_P, _P]
        lib.dnnl_primitive_execute.argtypes = [_P, _P, ctypes.c_int, _P]
        engine, stream = _P(), _P()
        _ok(lib.dnnl_engine_create(ctypes.byref(engine), _ENGINE_CPU, 0), "engine")
        _ok(lib.dnnl_stream_create(ctypes.byref(stream), engine, _STREAM_DEFAULT), "stream")
    except (OSError, AttributeError, DnnlError) as err:
        return None, f"{DIST} could not be loaded: {err}"
    return (lib, engine, stream), None


def _openmp_libraries() -> list[str]:
    """The GNU OpenMP libraries mapped into this process (Linux; elsewhere none are seen)."""
    try:
        with open("/proc/self/maps") as maps:
            return sorted({line.split()[-1] for line in maps if "libgomp" in line.rsplit("/", 1)[-1]})
    except OSError:
        return []


def missing() -> str | None:
    """Why the direct oneDNN convolutions are not available here, or None."""
    return _load()[1]


def describe() -> str:
    """Which call runs the CPU convolutions, for a bench's CPU line."""
    why = missing()
    return ("oneDNN 3.2 primitives built once, where faster than PyTorch's call" if why is None
            else f"PyTorch's oneDNN call ({why})")


def _ok(status: int, what: str) -> None:
    if status != 0:
        raise DnnlError(f"oneDNN {what} failed (status {status})")


def _dims(values: Sequence[int]) -> Any:
    return _Dims(*values)


def nhwc_strides(t: torch.Tensor) -> tuple[int, ...] | None:
    """The strides oneDNN is given for a 4-d tensor whose channels are dense (channels_last, or a channel slice of
    such a buffer); those of its size-1 dimensions made what a channels_last tensor would have (they address
    nothing). None where the channels are not dense.
    """
    n, c, h, w = t.shape
    s0, s1, s2, s3 = t.stride()
    if c > 1 and s1 != 1:
        return None
    s3 = s3 if w > 1 else c
    s2 = s2 if h > 1 else w * s3
    s0 = s0 if n > 1 else h * s2
    return s0, 1, s2, s3


class _Memory:
    """A memory descriptor and its memory object (whose data pointer is set per call)."""

    def __init__(self, lib: Any, engine: Any, md: _P) -> None:
        self.lib, self.md, self.mem = lib, md, _P()
        status = lib.dnnl_memory_create(ctypes.byref(self.mem), md, engine, None)
        if status != 0:
            lib.dnnl_memory_desc_destroy(md)
            _ok(status, "memory")

    def close(self) -> None:
        self.lib.dnnl_memory_destroy(self.mem)
        self.lib.dnnl_memory_desc_destroy(self.md)


def _md(lib: Any, shape: Sequence[int], dtype: int, strides: Sequence[int] | None = None, tag: int = 0) -> _P:
    md = _P()
    if strides is not None:
        _ok(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(md), len(shape), _dims(shape), dtype,
                                                     _dims(strides)), "memory descriptor")
    else:
        _ok(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(md), len(shape), _dims(shape), dtype, tag),
            "memory descriptor")
    return md


class _Built:
    """A oneDNN primitive with its memory objects, built once for one set of shapes and layouts; a call sets the
    data pointers of its inputs and outputs and executes. Thread-safe (a call holds the object's lock).
    """

    def __init__(self) -> None:
        loaded, why = _load()
        if loaded is None:
            raise DnnlError(why or "oneDNN is not available")
        self._lib, self._engine, self._stream = loaded
        self._lock = threading.Lock()
        self._owned: list[_Memory] = []  # memories whose data stays put (weights, bias)
        self._io: list[_Memory] = []  # memories whose data pointer each call sets, in ``_execute``'s order
        self._prim: _P | None = None
        self.implementation, self.generic = "", False

    def _memory(self, md: _P, io: bool = True) -> _Memory:
        m = _Memory(self._lib, self._engine, md)
        (self._io if io else self._owned).append(m)
        return m

    def _finish(self, pd: _P, args: list[tuple[int, _Memory]]) -> None:
        """Create the primitive from its descriptor (destroyed here) and fix its argument list."""
        lib = self._lib
        try:
            info = ctypes.c_char_p()
            lib.dnnl_primitive_desc_query(pd, _QUERY_IMPL_INFO, 0, ctypes.byref(info))
            self.implementation = (info.value or b"").decode()
            # oneDNN's generic fallbacks (a kernel larger than a tiny input: a bf16 5x5 depthwise at 2 x 2 px; a
            # channel slice as a convolution's input) took 10-500x PyTorch's time: callers keep PyTorch's call there
            self.generic = self.implementation.startswith(GENERIC)
            prim = _P()
            _ok(lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive")
            self._prim = prim
        finally:
            lib.dnnl_primitive_desc_destroy(pd)
        self._arg_list = args
        self._args = (_Arg * len(args))(*[_Arg(a, m.mem) for a, m in args])

    def _execute(self, *tensors: torch.Tensor) -> None:
        set_handle = self._lib.dnnl_memory_set_data_handle
        with self._lock:
            for m, t in zip(self._io, tensors, strict=True):
                set_handle(m.mem, t.data_ptr())
            _ok(self._lib.dnnl_primitive_execute(self._prim, self._stream, len(self._args), self._args), "execute")
        tape = getattr(_local, "tape", None)
        if tape is not None:
            tape.append(Bound(self, tensors))

    def __del__(self) -> None:
        lib = getattr(self, "_lib", None)
        if lib is None:
            return
        try:
            if getattr(self, "_prim", None) is not None:
                lib.dnnl_primitive_destroy(self._prim)
            for m in (*getattr(self, "_io", ()), *getattr(self, "_owned", ())):
                m.close()
        except (AttributeError, TypeError):  # at interpreter exit the library may already be gone
            pass


class Bound:
    """A built primitive with its inputs and outputs fixed, memory objects of its own bound to them once: a call is
    one ``execute``, no lock (no shared memory object changes). Holds the tensors, so their memory stays put.
    """

    def __init__(self, built: _Built, tensors: Sequence[torch.Tensor]) -> None:
        self.built, self.tensors = built, tuple(tensors)
        lib = built._lib
        self._lib, self._mems = lib, []
        for m, t in zip(built._io, self.tensors, strict=True):
            mem = _P()
            _ok(lib.dnnl_memory_create(ctypes.byref(mem), m.md, built._engine, _P(t.data_ptr())), "memory")
            self._mems.append(mem)
        mine = {id(m): mem for m, mem in zip(built._io, self._mems, strict=True)}
        self._args = (_Arg * len(built._arg_list))(*[_Arg(a, mine.get(id(m), m.mem)) for a, m in built._arg_list])
        self._call = functools.partial(lib.dnnl_primitive_execute, built._prim, built._stream, len(self._args),
                                       self._args)

    def __call__(self) -> None:
        if self._call():
            raise DnnlError("oneDNN execute failed")

    def __del__(self) -> None:
        try:
            for mem in getattr(self, "_mems", ()):
                self._lib.dnnl_memory_destroy(mem)
        except (AttributeError, TypeError):  # at interpreter exit the library may already be gone
            pass


def _dtype(t: torch.Tensor) -> int:
    return {torch.float32: _F32, torch.bfloat16: _BF16}[t.dtype]


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    strides = nhwc_strides(t)
    if strides is None:
        raise ValueError("oneDNN here takes tensors whose channels are dense (channels_last)")
    return strides


class Convolution(_Built):
    """One convolution (weights OIHW, float) with an optional activation or residual add, for one input shape and
    layout.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, x: torch.Tensor, stride: int,
                 padding: tuple[tuple[int, int], tuple[int, int]], dilation: int, groups: int, act: str | None,
                 residual: torch.Tensor | None = None) -> None:
        """``padding``: ((top, bottom), (left, right)). ``act``: None, "relu" or "relu6"; ``residual``: a tensor
        added to the result (shape and layout of the output), only without an activation.
        """
        super().__init__()
        lib = self._lib
        dt = _dtype(x)
        self.dtype, self.in_shape = x.dtype, x.shape
        n, _, h, w = x.shape
        (pt, pb), (pl, pr) = padding
        kh, kw = weight.shape[2:]
        cout = weight.shape[0]
        ho = (h + pt + pb - dilation * (kh - 1) - 1) // stride + 1
        wo = (w + pl + pr - dilation * (kw - 1) - 1) // stride + 1
        self.out_shape = (n, cout, ho, wo)
        if residual is not None and (act is not None or tuple(residual.shape) != self.out_shape):
            raise ValueError("a residual add takes an output-shaped tensor and no activation")
        src = self._memory(_md(lib, x.shape, dt, _strides(x)))
        dst = self._memory(_md(lib, self.out_shape, dt, (ho * wo * cout, 1, wo * cout, cout)))
        res = None if residual is None else self._memory(_md(lib, self.out_shape, dt, _strides(residual)))
        self.residual = res is not None
        # A bf16 depthwise convolution takes a bf16 bias: given an fp32 one, oneDNN 3.2 passes over its brdgmm kernel
        # for the slower jit_dw (1.4-1.8x the time at stride 1). PyTorch rounds that bias to bf16 too.
        bias_type = torch.bfloat16 if x.dtype == torch.bfloat16 and groups > 1 else torch.float32
        self._bias = (torch.zeros(cout) if bias is None else bias.detach()).to(bias_type).contiguous()
        bias_mem = self._memory(_md(lib, [cout], _dtype(self._bias), tag=_TAG_A), io=False)
        lib.dnnl_memory_set_data_handle(bias_mem.mem, self._bias.data_ptr())
        wshape = list(weight.shape) if groups == 1 else [groups, cout // groups, *weight.shape[1:]]
        attr, post_ops, pd = _P(), _P(), _P()
        md_w_any = _md(lib, wshape, dt, tag=_TAG_ANY)
        try:
            _ok(lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "attributes")
            _ok(lib.dnnl_post_ops_create(ctypes.byref(post_ops)), "post-ops")
            if act is not None:
                alg, beta = {"relu": (_ELTWISE_RELU, 0.0), "relu6": (_ELTWISE_CLIP, 6.0)}[act]
                _ok(lib.dnnl_post_ops_append_eltwise(post_ops, alg, ctypes.c_float(0.0), ctypes.c_float(beta)),
                    "eltwise post-op")
            if res is not None:
                _ok(lib.dnnl_post_ops_append_binary(post_ops, _BINARY_ADD, res.md), "binary post-op")
            _ok(lib.dnnl_primitive_attr_set_post_ops(attr, post_ops), "post-ops")
            _ok(lib.dnnl_convolution_forward_primitive_desc_create(
                ctypes.byref(pd), self._engine, _FORWARD_INFERENCE, _CONV_DIRECT, src.md, md_w_any, bias_mem.md,
                dst.md, _dims([stride, stride]), _dims([dilation - 1, dilation - 1]), _dims([pt, pl]),
                _dims([pb, pr]), attr), "convolution")
            try:
                weights = self._reorder_weights(weight, wshape, dt, pd)
            except DnnlError:
                lib.dnnl_primitive_desc_destroy(pd)
                raise
        finally:
            lib.dnnl_post_ops_destroy(post_ops)
            lib.dnnl_primitive_attr_destroy(attr)
            lib.dnnl_memory_desc_destroy(md_w_any)
        args = [(_ARG_SRC, src), (_ARG_DST, dst), (_ARG_WEIGHTS, weights), (_ARG_BIAS, bias_mem)]
        if res is not None:
            args.append((_ARG_POST_OP_0 | _ARG_SRC_1, res))
        self._finish(pd, args)

    def _reorder_weights(self, weight: torch.Tensor, wshape: list[int], dt: int, pd: _P) -> _Memory:
        """The weights in the layout the primitive chose, once (a torch buffer holds them)."""
        lib, engine = self._lib, self._engine
        md = _P()
        _ok(lib.dnnl_memory_desc_clone(ctypes.byref(md), _P(lib.dnnl_primitive_desc_query_md(pd, _QUERY_WEIGHTS_MD,
                                                                                             0))), "weights md")
        packed = self._memory(md, io=False)
        self._packed = torch.empty(lib.dnnl_memory_desc_get_size(md), dtype=torch.uint8)
        lib.dnnl_memory_set_data_handle(packed.mem, self._packed.data_ptr())
        plain = weight.detach().to(self.dtype).contiguous()
        src = _Memory(lib, engine, _md(lib, wshape, dt, tag=_TAG_ABCD if len(wshape) == 4 else _TAG_ABCDE))
        rpd, rprim = _P(), _P()
        try:
            lib.dnnl_memory_set_data_handle(src.mem, plain.data_ptr())
            _ok(lib.dnnl_reorder_primitive_desc_create(ctypes.byref(rpd), src.md, engine, md, engine, None),
                "weights reorder")
            _ok(lib.dnnl_primitive_create(ctypes.byref(rprim), rpd), "weights reorder")
            args = (_Arg * 2)(_Arg(_ARG_SRC, src.mem), _Arg(_ARG_DST, packed.mem))
            _ok(lib.dnnl_primitive_execute(rprim, self._stream, 2, args), "weights reorder")
            _ok(lib.dnnl_stream_wait(self._stream), "stream")
        finally:
            lib.dnnl_primitive_destroy(rprim)
            lib.dnnl_primitive_desc_destroy(rpd)
            src.close()
        return packed

    def __call__(self, x: torch.Tensor, residual: torch.Tensor | None = None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
        """The convolution of ``x`` (the shape and layout it was built for), into ``out`` or a new channels_last
        tensor.
        """
        if x.dtype != self.dtype or x.shape != self.in_shape:  # a mismatch would read past the buffer
            raise ValueError(f"built for {self.dtype} {self.in_shape}, given {x.dtype} {tuple(x.shape)}")
        if self.residual and residual is None:
            raise ValueError("this convolution was built with a residual add: pass the residual")
        return self.run(x, residual, out)

    def run(self, x: torch.Tensor, residual: torch.Tensor | None = None,
            out: torch.Tensor | None = None) -> torch.Tensor:
        """``__call__`` without its checks, for a caller that looked this primitive up by the input's (and the
        residual's) type, shape and strides.
        """
        if out is None:
            out = torch.empty(self.out_shape, dtype=self.dtype, memory_format=torch.channels_last)
        if residual is None:
            self._execute(x, out)
        else:
            self._execute(x, out, residual)
        return out


class Resampling(_Built):
    """Bilinear resampling with half-pixel centres (PyTorch's ``align_corners=False``) from one tensor into another
    of the same type, either of them a channel slice: the decoder's upsampling straight into its concat buffer, in
    the body's precision, without a dense fp32 copy between.
    """

    def __init__(self, x: torch.Tensor, dst: torch.Tensor) -> None:
        super().__init__()
        if x.dtype != dst.dtype:
            raise ValueError("resampling keeps the type")
        lib, dt = self._lib, _dtype(x)
        src = self._memory(_md(lib, x.shape, dt, _strides(x)))
        out = self._memory(_md(lib, dst.shape, dt, _strides(dst)))
        pd = _P()
        _ok(lib.dnnl_resampling_forward_primitive_desc_create(ctypes.byref(pd), self._engine, _FORWARD_INFERENCE,
                                                              _RESAMPLING_LINEAR, None, src.md, out.md, None),
            "resampling")
        self._finish(pd, [(_ARG_SRC, src), (_ARG_DST, out)])

    def __call__(self, x: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        self._execute(x, dst)
        return dst


class Softmax(_Built):
    """Softmax over the channels (the read-out's bins) of a channels_last tensor, into an fp32 one: the bf16 logits
    need no fp32 copy first.
    """

    def __init__(self, x: torch.Tensor, dst: torch.Tensor) -> None:
        super().__init__()
        if dst.dtype != torch.float32 or dst.shape != x.shape:
            raise ValueError("the softmax writes fp32 of the input's shape")
        lib = self._lib
        src = self._memory(_md(lib, x.shape, _dtype(x), _strides(x)))
        out = self._memory(_md(lib, dst.shape, _F32, _strides(dst)))
        pd = _P()
        _ok(lib.dnnl_softmax_forward_primitive_desc_create(ctypes.byref(pd), self._engine, _FORWARD_INFERENCE,
                                                           _SOFTMAX_ACCURATE, src.md, out.md, 1, None), "softmax")
        self._finish(pd, [(_ARG_SRC, src), (_ARG_DST, out)])

    def __call__(self, x: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        self._execute(x, dst)
        return dst
