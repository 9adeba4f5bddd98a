"""A CPU forward recorded once per input shape and replayed: the CPU's counterpart of a CUDA graph.

At batch 1 and 256 px about a fifth of a forward was Python between the kernels: looking up each built primitive,
setting its data pointers, allocating outputs, dispatching PyTorch's ops (docs/experiments, "A CPU forward recorded
once per input shape and replayed"). A record holds the forward's own buffers, its PyTorch ops with their tensors
(seen by a dispatch mode) and its oneDNN primitives bound to those tensors (``dnnl.Bound``); a replay calls them
in order and nothing else. An op that returned a new tensor is replayed through its ``out=`` form into the tensor it
returned when recorded, so every later op reads the memory it read then.

A forward can be recorded only if what it does depends on the shapes alone, not on the data: the fused forward's
branches do (a sync on a value, e.g. ``.item()``, refuses the record and the shape runs eagerly).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode

from . import dnnl
from .folded import remember
from .pool import BufferPool, Scope

log = logging.getLogger(__name__)

Forward = Callable[[torch.Tensor, Scope, torch.Tensor | None, torch.Tensor | None], torch.Tensor]

RECORD_BUDGET = 192 * 2**20  # the memory a runtime's records hold together: the most recently used kept within it
RECORD_PIXELS = 512 * 512  # inputs of more pixels (the batch's together) are not recorded: their records outgrow it
SEEN = 32  # input shapes whose calls are counted (recorded on the second call; one refused then is not tried again)
_ALLOCATIONS = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default}


class RecordError(RuntimeError):
    """The forward did something a replay cannot repeat."""


def _out_overload(func: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The ``out=`` form of a functional op: the same arguments and one mutable ``out``."""
    names = [a.name for a in func._schema.arguments]
    for name in func.overloadpacket.overloads():
        other = getattr(func.overloadpacket, name)
        args = other._schema.arguments
        outs = [a.name for a in args if a.is_out]
        if outs == ["out"] and [a.name for a in args if not a.is_out] == names:
            return other
    return None


def _address(t: torch.Tensor) -> int | None:
    """Where a tensor's memory starts (its storage's, not its own offset); None for oneDNN's opaque tensors."""
    return None if t.is_mkldnn else t.untyped_storage().data_ptr()


def _addresses(values: tuple[Any, ...]) -> set[int | None]:
    return {_address(v) for v in values if isinstance(v, torch.Tensor)} - {None}


def _step(func: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any],
          result: Any) -> tuple[Callable[[], object] | None, bool]:
    """What replays this op (None where it needs no replay: an allocation, a view), and whether its result is a tensor
    it made.
    """
    if func in _ALLOCATIONS:
        return None, True
    schema = func._schema
    if schema.is_mutable:  # in place, or into ``out=``: the same call writes the same memory
        return partial(func, *args, **kwargs), False
    if not isinstance(result, torch.Tensor):
        raise RecordError(f"{func} returns {type(result).__name__}: the forward depends on its data")
    if _address(result) in _addresses(args):
        return None, False  # a view, or an input's memory under another name (``_unsafe_view``): nothing to replay
    if any(r.alias_info is not None for r in schema.returns):  # a view's op that had to copy
        source = args[0] if args else None
        if isinstance(source, torch.Tensor) and source.shape == result.shape:  # ``contiguous``, ``to``: a copy
            return partial(torch.ops.aten.copy_.default, result, source), True
        raise RecordError(f"{func} made a copy of another shape: no replay is known for it")
    out = _out_overload(func)
    if out is None:
        raise RecordError(f"{func} has no out= form to replay it into the recorded tensor")
    return partial(out, *args, **kwargs, out=result), True


class _Slot(NamedTuple):
    """A tensor the forward made, by the value it held (``_Recorder``) and its view of that value's memory."""

    value: int
    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # in elements, from the start of the value's storage


class _BoundSlots(NamedTuple):
    """A bound primitive as recorded: the built primitive and its tensors, those the forward made as slots."""

    built: Any
    tensors: tuple[Any, ...]


def _mapped(step: object, leaf: Callable[[Any], Any], bound: Callable[[Any, tuple[Any, ...]], object]) -> Any:
    """``step`` (an op's partial, or a primitive with its tensors) rebuilt with ``leaf`` applied to each argument,
    plain tuples and lists walked into; a primitive rebuilt by ``bound(built, tensors)``.
    """
    def each(value: Any) -> Any:
        return type(value)(each(v) for v in value) if type(value) in (tuple, list) else leaf(value)  # not a _Slot

    if isinstance(step, (dnnl.Bound, _BoundSlots)):
        return bound(step.built, each(step.tensors))
    assert isinstance(step, partial)
    return partial(step.func, *each(step.args), **{k: each(v) for k, v in step.keywords.items()})


class _Recorder(TorchDispatchMode):
    """Appends each op's replay to the tape, and notes each value (a storage) the forward made: when it was made, its
    size and the last step that touches it.

    The tape holds the forward's tensors as slots, not the tensors, so each is freed when the forward drops it and
    recording costs little more memory than an eager call (holding them all doubled its peak at 512 px).
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No compiler guard around the dispatch: it would import torch._dynamo (about 1 s) at the first record, and
        a recorded forward is never compiled (``OptimizedRuntime`` records only without ``compile``).
        """
        return False

    def __init__(self, tape: list[object]) -> None:
        super().__init__()
        self.tape = tape
        self.values: list[tuple[int, int]] = []  # by value: (the tape's length when it was made, its bytes)
        self.last: dict[int, int] = {}  # value: the last step that touches it
        # By storage (its C object, which the weak reference keeps from being reused while recording): (value, where
        # its memory was, the storage weakly).
        self._made: dict[int, tuple[int, int, StorageWeakRef]] = {}
        self._slotted = 0  # tape entries before this one hold slots, not tensors

    def made(self, t: torch.Tensor) -> None:
        """Note ``t``'s storage as a value of its own, if it is not one already (an op may return an alias)."""
        address = _address(t)
        if address is None:
            raise RecordError("a tensor without plain memory was made (oneDNN's own layout)")
        storage = t.untyped_storage()
        if storage._cdata not in self._made:
            self._made[storage._cdata] = (len(self.values), address, StorageWeakRef(storage))
            self.values.append((len(self.tape), storage.nbytes()))

    def _value(self, t: torch.Tensor) -> int | None:
        """The value ``t``'s memory holds, or None for memory the forward did not make (its input, output, weights).

        By storage, not address: a storage freed and another made at its address are two values.
        """
        if t.is_mkldnn:
            return None
        entry = self._made.get(t.untyped_storage()._cdata)
        if entry is None:
            return None
        if entry[1] != _address(t):  # an ``out=`` that resized it, or ``set_``: its slot no longer holds it
            raise RecordError("a tensor the forward made was moved to other memory")
        return entry[0]

    def _slot(self, value: Any, index: int) -> Any:
        """A tensor the forward made as its slot, noted as touched by step ``index``; anything else as it is."""
        v = self._value(value) if isinstance(value, torch.Tensor) else None
        if v is None:
            return value
        self.last[v] = index
        return _Slot(v, value.dtype, tuple(value.shape), tuple(value.stride()), int(value.storage_offset()))

    def slot_tape(self) -> None:
        """The tape's new entries (ops, and primitives the dnnl hook appended) with slots for the forward's tensors."""
        for i in range(self._slotted, len(self.tape)):
            self.tape[i] = _mapped(self.tape[i], partial(self._slot, index=i), _BoundSlots)
        self._slotted = len(self.tape)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        self.slot_tape()  # primitives executed since the last op, while their tensors are alive
        result = func(*args, **kwargs)
        step, made = _step(func, args, kwargs, result)
        if made:
            self.made(result)
        if step is not None:
            self.tape.append(step)
            self.slot_tape()
        return result


ALIGN = 64  # bytes: every tensor of the arena starts on a cache line


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc's), None elsewhere (musl, macOS, Windows)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # TypeError: no CDLL(None) on Windows
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim  # type: ignore[no-any-return]


def give_back_freed_memory() -> None:
    """Return the heap's free pages to the system: the recording call's tensors, freed, would otherwise stay resident
    beside the new arena (docs/experiments, "The recording's memory"); a batch's buffers, after it.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _plan(values: list[tuple[int, int]], last: dict[int, int]) -> tuple[dict[int, int], int]:
    """Offsets in one arena for the values made while recording, two sharing memory only where their lives (from
    birth to the last step that touches them) do not overlap; and the arena's size. Greedy, largest first.
    """
    lives = sorted(((values[v][1], values[v][0], end, v) for v, end in last.items()), reverse=True)
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, start, end)
    offsets: dict[int, int] = {}
    for size, start, end, v in lives:
        offset = 0
        for o, sz, _, _ in sorted(x for x in placed if x[2] <= end and start <= x[3]):
            if offset + size <= o:
                break
            offset = max(offset, -(-(o + sz) // ALIGN) * ALIGN)
        placed.append((offset, size, start, end))
        offsets[v] = offset
    return offsets, -(-max((o + sz for o, sz, _, _ in placed), default=0) // ALIGN) * ALIGN


class Record:
    """One forward, recorded on its own input and output; the tensors it makes live in one arena, reused as in the
    eager forward (``_plan``).
    """

    def __init__(self, forward: Forward, L: np.ndarray, hints: np.ndarray | None, out_shape: tuple[int, ...]) -> None:
        self.L = torch.from_numpy(L.copy())
        self.hints = None if hints is None else torch.from_numpy(hints.copy())
        self.out = torch.empty(out_shape, dtype=torch.float32)
        tape: list[object] = []
        recorder = _Recorder(tape)
        with recorder, dnnl.recording(tape):
            forward(self.L, Scope(BufferPool()), self.out, self.hints)  # the scope's buffers are the arena's now
        recorder.slot_tape()
        offsets, size = _plan(recorder.values, recorder.last)
        self.made_bytes = sum(nbytes for _, nbytes in recorder.values)  # the values, each in memory of its own
        del recorder
        give_back_freed_memory()  # the eager call's freed tensors, before the arena is mapped beside them
        self.arena = torch.empty(size, dtype=torch.uint8)
        self.steps: list[Callable[[], object]] = [self._placed(step, offsets) for step in tape]
        self.nbytes = size + self.L.nbytes + self.out.nbytes + (0 if self.hints is None else self.hints.nbytes)
        self._lock = threading.Lock()

    def _placed(self, step: object, offsets: dict[int, int]) -> Callable[[], object]:
        """The step on the arena's memory: each slot a view at its value's offset."""
        def place(value: Any) -> Any:
            if not isinstance(value, _Slot):
                return value
            return self.arena.view(value.dtype).as_strided(
                value.shape, value.stride, offsets[value.value] // value.dtype.itemsize + value.offset)

        return _mapped(step, place, dnnl.Bound)

    def replay(self, L: np.ndarray, hints: np.ndarray | None, result: np.ndarray) -> None:
        with self._lock:
            self.L.numpy()[...] = L
            if self.hints is not None:
                self.hints.numpy()[...] = hints
            for step in self.steps:
                step()
            result[...] = self.out.numpy()


class Replays:
    """A runtime's records by input shape: a shape is recorded on its second call and replayed from its third."""

    def __init__(self, forward: Forward) -> None:
        self.forward = forward
        self._records: OrderedDict[Hashable, Record] = OrderedDict()
        self._seen: OrderedDict[Hashable, int] = OrderedDict()
        self._refused: OrderedDict[Hashable, bool] = OrderedDict()  # shapes a record was refused for
        self._lock = threading.Lock()

    def run(self, key: Hashable, L: np.ndarray, hints: np.ndarray | None, result: np.ndarray) -> bool:
        """The forward into ``result`` from a record (made now if this is the shape's second call): True; False where
        the caller runs it eagerly. The caller holds ``torch.inference_mode``.
        """
        with self._lock:
            record = self._records.get(key)
            if record is None:
                calls = self._seen.pop(key, 0) + 1
                self._seen[key] = calls
                while len(self._seen) > SEEN:
                    self._seen.popitem(last=False)
                if calls < 2 or key in self._refused or L.size > RECORD_PIXELS:
                    return False
                record = self._record(L, hints, result.shape)
                if record is None:
                    remember(self._refused, key, lambda: True, SEEN)
                    return False
                self._records[key] = record
                while sum(r.nbytes for r in self._records.values()) > RECORD_BUDGET:
                    self._records.popitem(last=False)
                log.info("input %s recorded, %d MB: %d records hold %d MB", tuple(L.shape), record.nbytes >> 20,
                         len(self._records), sum(r.nbytes for r in self._records.values()) >> 20)
                result[...] = record.out.numpy()  # the recording call's own output
                return True
            self._records.move_to_end(key)
        record.replay(L, hints, result)
        return True

    def _record(self, L: np.ndarray, hints: np.ndarray | None, out_shape: tuple[int, ...]) -> Record | None:
        try:
            record = Record(self.forward, L, hints, out_shape)
        except RecordError as err:
            log.info("input %s runs eagerly: %s", tuple(L.shape), err)
            return None
        if record.nbytes > RECORD_BUDGET // 2:
            log.info("input %s runs eagerly: its record would hold %d MB", tuple(L.shape), record.nbytes >> 20)
            return None
        return record

    def __len__(self) -> int:
        return len(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._seen.clear()
            self._refused.clear()
