"""The model on OpenVINO (``--engine openvino``, the optional extra ``openvino``): offered because on two CPU kinds
(the Xeon with AMX in bf16, the AVX2-only EPYC in fp32, both at batch 1) OpenVINO once ran our model faster than our
own runtime (docs/experiments, "Whether to offer OpenVINO as an engine"). Since the recorded replay ours is level or
ahead on every CPU kind measured; ``bench --peers`` says which is faster here.

- The model is converted once per weights (a trace with a free batch and size) and kept as OpenVINO IR in the user's
  cache folder, so a later run skips the five-second conversion.
- Each input shape gets its own compiled model (static shapes are OpenVINO's fast path; a third of a second to
  compile), the last few kept.
- A batch with colour hints goes to our optimized runtime: the hint features' box size follows the canvas size,
  which a size-free trace cannot hold.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
import uuid
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import color as color_module
from .. import encoder as encoder_module
from .. import model as model_module
from .. import readout as readout_module
from ..model import CVUNet
from . import optimized_or_baseline
from .base import Runtime, check_input

log = logging.getLogger(__name__)

OPENVINO_EXTRA = "pip install 'colorizer[openvino]'"
COMPILED_SHAPES = 8  # compiled models kept (one per input shape); a batch run meets a few shapes, the app a few more
KEPT_EXPORTS = 8  # converted models kept in the cache folder (one per weights file used)


def openvino_missing() -> str | None:
    """Why the OpenVINO engine cannot run here, or None."""
    if importlib.util.find_spec("openvino") is None:
        return f"the OpenVINO engine needs the openvino package: {OPENVINO_EXTRA}"
    return None


def compile_config(threads: int, precision: str) -> dict[str, Any]:
    """OpenVINO's CPU settings for one photo batch at a time: ``threads`` threads, the latency hint, the precision."""
    return {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32"}


def cache_folder() -> Path:
    """Where converted models live: ``COLORIZER_CACHE_DIR``, else the user's cache folder."""
    if folder := os.environ.get("COLORIZER_CACHE_DIR"):
        return Path(folder) / "openvino"
    import platformdirs

    return platformdirs.user_cache_path("Colorizer", "Colorizer") / "openvino"


def model_key(model: CVUNet) -> str:
    """A name for what a conversion depends on: the weights, the read-out, the model's code and OpenVINO's version."""
    import openvino as ov

    digest = hashlib.sha256()
    digest.update(json.dumps({**model.config.to_dict(), **model.readout.to_dict(), "openvino": ov.get_version(),
                              "torch": torch.__version__}, sort_keys=True, default=str).encode())
    for module in (model_module, encoder_module, readout_module, color_module, sys.modules[__name__]):
        digest.update(Path(module.__file__ or "").read_bytes())
    for name, value in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(value.detach().cpu().float().contiguous().numpy().tobytes())
    return digest.hexdigest()[:24]


class NoHints(torch.nn.Module):
    """The model as an export runs it: L in, ab out (colour hints are ours alone)."""

    def __init__(self, model: CVUNet) -> None:
        super().__init__()
        self.model = model

    def forward(self, L: torch.Tensor) -> torch.Tensor:
        return self.model(L, None)


def convert(model: CVUNet, xml: Path) -> None:
    """The fp32 model without hints as OpenVINO IR at ``xml`` (and its .bin), written whole or not at all."""
    import openvino as ov

    net = NoHints(copy.deepcopy(model).float().eval())
    example = torch.full((1, 1, 256, 256), 50.0)
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on sizes read as Python numbers: constant for x32 sizes
        converted = ov.convert_model(net, example_input=(example,), input=[ov.PartialShape([-1, 1, -1, -1])])
    xml.parent.mkdir(parents=True, exist_ok=True)
    tmp = xml.with_name(f".{xml.stem}.{uuid.uuid4().hex}.tmp.xml")  # unique to this call: threads and processes
    try:
        ov.save_model(converted, str(tmp), compress_to_fp16=False)
        os.replace(tmp.with_suffix(".bin"), xml.with_suffix(".bin"))
        os.replace(tmp, xml)  # last: an .xml is there only once its .bin is complete
    finally:
        for part in (tmp, tmp.with_suffix(".bin")):
            part.unlink(missing_ok=True)


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently used conversions."""
    def used(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except FileNotFoundError:  # pruned by another process meanwhile
            return 0.0

    exports = sorted(folder.glob("[!.]*.xml"), key=used, reverse=True)  # not another process's temporary files
    for old in exports[keep:]:
        for part in (old, old.with_suffix(".bin")):
            part.unlink(missing_ok=True)


def _load(model: CVUNet, core: Any, xml: Path) -> tuple[Any, bool]:
    """(OpenVINO model, whether it was converted now): from the cache where it holds a readable conversion, else
    converted (into the cache, or into a temporary folder where the cache cannot be written). Two processes or
    threads converting the same weights at once each write their own temporary files; the last rename wins.
    """
    if xml.is_file():
        try:
            loaded = core.read_model(str(xml))
            os.utime(xml)  # most recently used: the last to be pruned
            return loaded, False
        except (RuntimeError, OSError) as err:  # a damaged or half-pruned entry: convert again
            log.warning("the cached OpenVINO model %s could not be read (%s); converting again", xml, err)
    try:
        convert(model, xml)
        _prune(xml.parent, KEPT_EXPORTS)
        return core.read_model(str(xml)), True
    except OSError as err:
        log.warning("the OpenVINO cache folder %s cannot be written (%s); converting for this run only", xml.parent,
                    err)
        tmp = Path(tempfile.mkdtemp(prefix="colorizer-openvino-"))  # left for the system's temp cleaning: OpenVINO
        convert(model, tmp / xml.name)  # may map the .bin for as long as the model lives
        return core.read_model(str(tmp / xml.name)), True


class OpenVINORuntime:
    name = "openvino"

    def __init__(self, model: CVUNet, device: torch.device, precision: str = "fp32",
                 cache: Path | None = None) -> None:
        if (missing := openvino_missing()) is not None:
            raise ValueError(missing)
        if device.type != "cpu":
            raise ValueError("the OpenVINO engine runs on the CPU only: use --device cpu, or the optimized engine")
        if precision not in ("fp32", "bf16"):
            raise ValueError(f"the OpenVINO engine runs fp32 or bf16, not {precision}")
        import openvino as ov

        self.device, self.precision, self.model = device, precision, model
        self.hint_channels = model.config.hint_channels
        self.xml = (cache or cache_folder()) / f"{model_key(model)}.xml"
        self._core = ov.Core()
        # converted: whether this runtime converted the model (False: read from the cache)
        self._source, self.converted = _load(model, self._core, self.xml)
        self._config = compile_config(torch.get_num_threads(), precision)
        self._compiled: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._hinted: Runtime | None = None

    @property
    def compiled_shapes(self) -> list[tuple[int, ...]]:
        """The input shapes with a compiled model kept, least recently used first."""
        return list(self._compiled)

    def release_memory(self) -> None:
        self._compiled.clear()
        if self._hinted is not None:
            self._hinted.release_memory()

    def release_buffers(self) -> None:
        """The compiled models are what is kept, and slow to make again: nothing to give back between batches."""
        if self._hinted is not None:
            self._hinted.release_buffers()

    def run(self, L: np.ndarray, hints: np.ndarray | None = None) -> np.ndarray:
        check_input(L, hints, self.hint_channels)
        if hints is not None:
            return self._hint_runtime().run(L, hints)
        _, request = self._request(tuple(L.shape))
        request.infer({0: np.ascontiguousarray(L)})
        return np.array(request.get_output_tensor(0).data, np.float32)

    def _request(self, shape: tuple[int, ...]) -> tuple[Any, Any]:
        """(compiled model, its infer request) for one input shape."""
        if shape in self._compiled:
            self._compiled.move_to_end(shape)
            return self._compiled[shape]
        model = self._source.clone()
        model.reshape({model.inputs[0]: list(shape)})
        compiled = self._core.compile_model(model, "CPU", self._config)
        self._compiled[shape] = (compiled, compiled.create_infer_request())
        while len(self._compiled) > COMPILED_SHAPES:
            self._compiled.popitem(last=False)
        return self._compiled[shape]

    def _hint_runtime(self) -> Runtime:
        if self._hinted is None:
            self._hinted = optimized_or_baseline(self.model, self.device, self.precision)
        return self._hinted
