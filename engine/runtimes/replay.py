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

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import numpy as np
import torch
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


class _Recorder(TorchDispatchMode):
    """Appends each op's replay to the tape, and notes where each tensor made meanwhile was born."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No compiler guard around the dispatch: it would import torch._dynamo (about 1 s) at the first record, and
        a recorded forward is never compiled (``OptimizedRuntime`` records only without ``compile``).
        """
        return False

    def __init__(self, tape: list[object]) -> None:
        super().__init__()
        self.tape = tape
        self.born: dict[int, tuple[int, torch.Tensor]] = {}  # storage address: (the tape's length then, a tensor)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        step, made = _step(func, args, kwargs, result)
        if made:
            address = _address(result)
            if address is None:
                raise RecordError(f"{func} made a tensor without plain memory (oneDNN's own layout)")
            self.born.setdefault(address, (len(self.tape), result))
        if step is not None:
            self.tape.append(step)
        return result


def _tensors(step: object) -> list[torch.Tensor]:
    """The tensors a step reads or writes."""
    found: list[torch.Tensor] = []

    def add(value: object) -> None:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                add(v)

    if isinstance(step, dnnl.Bound):
        add(step.tensors)
    elif isinstance(step, partial):
        add(step.args)
        add(list(step.keywords.values()))
    return found


ALIGN = 64  # bytes: every tensor of the arena starts on a cache line


def _plan(born: dict[int, tuple[int, torch.Tensor]], tape: list[object]) -> tuple[dict[int, int], int]:
    """Offsets in one arena for the storages made while recording, two sharing memory only where their lives (from
    birth to the last step that touches them) do not overlap; and the arena's size. Greedy, largest first.
    """
    last: dict[int, int] = {}
    for i, step in enumerate(tape):
        for t in _tensors(step):
            ptr = _address(t)
            if ptr in born:
                last[ptr] = i
    lives = sorted(((born[p][1].untyped_storage().nbytes(), born[p][0], end, p) for p, end in last.items()),
                   reverse=True)
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, start, end)
    offsets: dict[int, int] = {}
    for size, start, end, ptr in lives:
        offset = 0
        for o, sz, _, _ in sorted(x for x in placed if x[2] <= end and start <= x[3]):
            if offset + size <= o:
                break
            offset = max(offset, -(-(o + sz) // ALIGN) * ALIGN)
        placed.append((offset, size, start, end))
        offsets[ptr] = offset
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
        offsets, size = _plan(recorder.born, tape)
        self.made_bytes = sum(t.untyped_storage().nbytes() for _, t in recorder.born.values())  # before ``_plan``
        self.arena = torch.empty(size, dtype=torch.uint8)
        self.steps: list[Callable[[], object]] = [self._moved(step, offsets) for step in tape]
        self.nbytes = size + self.L.nbytes + self.out.nbytes + (0 if self.hints is None else self.hints.nbytes)
        self._lock = threading.Lock()

    def _moved(self, step: object, offsets: dict[int, int]) -> Callable[[], object]:
        """The step on the arena's memory instead of the tensors it was recorded on."""
        def move(value: Any) -> Any:
            if isinstance(value, torch.Tensor):
                offset = offsets.get(_address(value))  # type: ignore[arg-type]
                if offset is None:  # the record's input or output, or a weight
                    return value
                return self.arena.view(value.dtype).as_strided(value.shape, value.stride(),
                                                               offset // value.itemsize + value.storage_offset())
            if isinstance(value, (tuple, list)):
                return type(value)(move(v) for v in value)
            return value

        if isinstance(step, dnnl.Bound):
            return dnnl.Bound(step.built, move(step.tensors))
        assert isinstance(step, partial)
        return partial(step.func, *move(step.args), **{k: move(v) for k, v in step.keywords.items()})

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
