"""A memory pool for intermediate tensors, reused across images and batches.

Buffers are keyed by (shape, dtype, device, layout, pinned). ``acquire`` hands out a free
buffer of that key or allocates one; a ``scope`` gives every buffer it handed out back
at its end. Callers must overwrite every element they read: pooled memory holds the
previous call's data.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

import torch

Key = tuple[tuple[int, ...], torch.dtype, str, bool, bool]


class BufferPool:
    def __init__(self, max_bytes: int = 768 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._free: OrderedDict[Key, list[torch.Tensor]] = OrderedDict()
        self._held_bytes = 0  # bytes of every buffer the pool owns (free or handed out)
        self.allocations = 0
        self.reuses = 0

    @staticmethod
    def _key(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, channels_last: bool,
             pinned: bool) -> Key:
        return (tuple(shape), dtype, str(device), channels_last, pinned)

    def acquire(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
                channels_last: bool = False, pinned: bool = False) -> tuple[Key, torch.Tensor]:
        """A buffer of that key (its contents are stale) and the key to ``release`` it under."""
        key = self._key(shape, dtype, device, channels_last and len(shape) == 4, pinned)
        free = self._free.get(key)
        if free:
            self._free.move_to_end(key)
            self.reuses += 1
            return key, free.pop()
        fmt = torch.channels_last if key[3] else torch.contiguous_format
        if pinned:
            t = torch.empty(shape, dtype=dtype, pin_memory=True)
        else:
            t = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        self.allocations += 1
        self._held_bytes += t.numel() * t.element_size()
        self._evict()
        return key, t

    def release(self, key: Key, t: torch.Tensor) -> None:
        self._free.setdefault(key, []).append(t)
        self._free.move_to_end(key)

    def _evict(self) -> None:
        """Drop the least recently used free buffers while over the byte budget."""
        while self._held_bytes > self.max_bytes and self._free:
            key, bufs = next(iter(self._free.items()))
            t = bufs.pop()
            self._held_bytes -= t.numel() * t.element_size()
            if not bufs:
                del self._free[key]

    @contextmanager
    def scope(self) -> Iterator[Scope]:
        s = Scope(self)
        try:
            yield s
        finally:
            s.close()

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    def clear(self) -> None:
        self._free.clear()
        self._held_bytes = 0


class Scope:
    """Buffers acquired for one forward pass; all go back to the pool when it closes."""

    def __init__(self, pool: BufferPool) -> None:
        self.pool = pool
        self._taken: list[tuple[Key, torch.Tensor]] = []

    def acquire(self, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
                channels_last: bool = False, pinned: bool = False) -> torch.Tensor:
        key, t = self.pool.acquire(shape, dtype, device, channels_last, pinned)
        self._taken.append((key, t))
        return t

    def close(self) -> None:
        for key, t in self._taken:
            self.pool.release(key, t)
        self._taken.clear()
