"""Runtimes: ways to run the same trained CV_UNet, chosen by name.

A runtime takes L (N x 1 x H x W float32 numpy, H and W multiples of 32) and returns
ab (N x 2 x H/2 x W/2 float32 numpy, Lab units).
"""

from __future__ import annotations

import copy
from typing import Protocol

import numpy as np
import torch

from .devices import resolve_device
from .model import MULTIPLE, CVUNet

ENGINES = ("optimized", "baseline")


class Runtime(Protocol):
    name: str
    device: torch.device
    precision: str

    def run(self, L: np.ndarray) -> np.ndarray: ...

    def release_memory(self) -> None:
        """Give back what is kept between calls (after running out of memory)."""
        ...


def check_input(L: np.ndarray) -> None:
    if L.ndim != 4 or L.shape[1] != 1 or L.dtype != np.float32:
        raise ValueError(f"expected N x 1 x H x W float32 L, got {L.shape} {L.dtype}")
    if L.shape[2] % MULTIPLE or L.shape[3] % MULTIPLE:
        raise ValueError(f"H and W must be multiples of {MULTIPLE}, got {L.shape[2:]}")


class BaselineRuntime:
    """The textbook module: torch.cat skips, NCHW, fp32, fresh tensors on every call."""

    name = "baseline"
    precision = "fp32"

    def __init__(self, model: CVUNet, device: torch.device) -> None:
        self.device = device
        self.model = copy.deepcopy(model).float().eval().to(device)

    def run(self, L: np.ndarray) -> np.ndarray:
        check_input(L)
        with torch.inference_mode():
            ab = self.model(torch.from_numpy(L).to(self.device))
            return ab.float().cpu().numpy()

    def release_memory(self) -> None:
        """Nothing is kept between calls: fresh tensors every time."""


def make_runtime(engine: str, model: CVUNet, device: str | torch.device = "auto", precision: str = "fp32",
                 compile: bool = False) -> Runtime:
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    if engine == "baseline":
        if precision != "fp32":
            raise ValueError("the baseline runtime runs fp32 only")
        return BaselineRuntime(model, dev)
    if engine == "optimized":
        from .optimized import OptimizedRuntime

        return OptimizedRuntime(model, dev, precision, compile=compile)
    raise ValueError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")
