"""Ways to run the same trained CV_UNet, chosen by name: ``make_runtime("optimized" | "baseline" | "openvino")``."""

from __future__ import annotations

import torch

from ..devices import resolve_device
from ..model import CVUNet
from ..options import ENGINES
from .base import Runtime, check_input
from .baseline import BaselineRuntime
from .optimized import OptimizedRuntime

__all__ = ["ENGINES", "BaselineRuntime", "OptimizedRuntime", "Runtime", "check_input", "make_runtime",
           "optimized_or_baseline"]


def make_runtime(engine: str, model: CVUNet, device: str | torch.device = "auto", precision: str = "fp32",
                 compile: bool = False) -> Runtime:
    dev = device if isinstance(device, torch.device) else resolve_device(device)
    if engine == "baseline":
        if precision != "fp32":
            raise ValueError("the baseline runtime runs fp32 only")
        return BaselineRuntime(model, dev)
    if engine == "optimized":
        return OptimizedRuntime(model, dev, precision, compile=compile)
    if engine == "openvino":
        from .openvino_runtime import OpenVINORuntime  # imports openvino only when asked for

        return OpenVINORuntime(model, dev, precision)
    raise ValueError(f"unknown engine {engine!r}: use one of {', '.join(ENGINES)}")


def optimized_or_baseline(model: CVUNet, device: torch.device, precision: str = "fp32") -> Runtime:
    """The optimized runtime, or the baseline (fp32) for a model the optimized one does not support."""
    try:
        return OptimizedRuntime(model, device, precision)
    except ValueError:
        return BaselineRuntime(model, device)
