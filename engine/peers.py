"""The runtimes a deployment engineer would pick instead of ours, on the same weights: the model exported to
ONNX and run on ONNX Runtime and on OpenVINO (the optional extra ``peers``).

Each peer is a ``PeerRuntime`` whose ``run`` takes the same L batch as ``engine.runtimes`` (N x 1 x H x W float32,
Lab L) and returns the same ab (the model without hints); ``bench --peers`` times them beside our runtimes.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .model import CVUNet
from .runtimes.openvino_runtime import NoHints, compile_config

PEERS_EXTRA = "pip install 'colorizer[peers]'"


@dataclass(frozen=True)
class PeerRuntime:
    name: str  # "ONNX Runtime 1.31" or "OpenVINO 2026.4"
    precision: str  # "fp32" | "bf16"
    run: Callable[[np.ndarray], np.ndarray]

    @property
    def label(self) -> str:
        return f"{self.name}, {self.precision}"


def export_onnx(model: CVUNet, path: Path, size: int) -> Path:
    """The fp32 model as an ONNX file with a free batch size (opset 18, TorchScript exporter)."""
    wrapped = NoHints(model.float().eval())
    example = torch.zeros(1, 1, size, size)
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's notes on its own deprecations
        torch.onnx.export(wrapped, (example,), str(path), input_names=["L"], output_names=["ab"], opset_version=18,
                          dynamic_axes={"L": {0: "batch"}, "ab": {0: "batch"}}, dynamo=False)
    return path


def missing_peers() -> list[str]:
    """The peer packages not installed (the bench then says which, and how to get them)."""
    return [name for name in ("onnx", "onnxruntime", "openvino") if importlib.util.find_spec(name) is None]


def onnxruntime_peer(onnx_file: Path, threads: int) -> PeerRuntime:
    """ONNX Runtime's CPU provider with all its graph optimisations, ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    version = ".".join(ort.__version__.split(".")[:2])

    def run(L: np.ndarray) -> np.ndarray:
        return np.asarray(session.run(["ab"], {"L": np.ascontiguousarray(L, np.float32)})[0])

    return PeerRuntime(f"ONNX Runtime {version}", "fp32", run)


def openvino_peer(onnx_file: Path, threads: int, precision: str, shape: tuple[int, ...]) -> PeerRuntime:
    """OpenVINO on the CPU, compiled for one input ``shape`` (static shapes are its fast path), latency hint.

    ``precision``: "fp32" or "bf16" (OpenVINO's inference precision hint; bf16 only where the CPU has it).
    """
    import openvino as ov

    core = ov.Core()
    model = core.read_model(str(onnx_file))
    model.reshape({model.inputs[0]: ov.PartialShape(list(shape))})
    compiled = core.compile_model(model, "CPU", compile_config(threads, precision))
    request = compiled.create_infer_request()
    version = ".".join(ov.get_version().split("-")[0].split(".")[:2])

    def run(L: np.ndarray) -> np.ndarray:
        request.infer({0: np.ascontiguousarray(L, np.float32)})
        return np.array(request.get_output_tensor(0).data, np.float32)

    return PeerRuntime(f"OpenVINO {version}", precision, run)
