"""What a training run is asked to do: ``TrainSettings``, from ``python main.py train``'s options.

Why its own module: the training's steps, checkpoints and card all read the settings, and the
settings import nothing of theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIRST_TRAINED_BLOCK = 5  # encoder blocks from here (stride 16 and 32) are fine-tuned; earlier stay frozen


@dataclass
class TrainSettings:
    data: Path
    out: Path
    work: Path
    steps: int = 6000
    batch: int = 12
    size: int = 224
    lr: float = 1e-3
    encoder_lr_scale: float = 0.5
    decoder_lr_scale: float = 1.0  # 0: the decoder, head and refinement stay the start's (only the encoder learns)
    freeze_steps: int = 600
    reg_weight: float = 5.0
    reg_beta: float = 0.05  # smooth-L1 beta on ab/110: larger is closer to L2 (PSNR), smaller to L1
    rebalance: float = 0.5  # 1.0: no class rebalancing
    seed: int = 0
    max_minutes: float | None = None
    resume: bool = False
    init: Path | None = None
    val_every: int = 250
    ema_decay: float = 0.0  # e.g. 0.998: ship a moving average of the weights over ~1/(1-decay) steps
    tune_fraction: float = 0.0  # e.g. 0.1: photos held out of training to choose the snapshot and read-out on
    colour_target: float = 0.85  # with tuning photos: the read-out keeps this share of the originals' colour
    crop_min: float = 0.3  # smallest crop, as a share of the photo's shorter side
    gamma_jitter: float = 0.0  # e.g. 0.2: log-gamma jitter on L
    degrade_share: float = 0.0  # crops given as old-print scans of themselves (degrade.py); targets stay clean
    degrade_strength: float = 1.0  # DegradeSettings.strength for those
    balance_groups: bool = False  # draw photos by MANIFEST group (groups.balanced_weights), the one-source food capped
    extra_data: Path | None = None  # e.g. the cut-outs: more training photos, drawn at their own share
    extra_share: float = 0.1  # the extra folder's share of all samples
    threads: int | None = None
    hint_channels: int = 0  # 3: a model that also reads colour hints (ab and mask)
    encoder: str = "lite0"  # the ImageNet encoder of a fresh model ("lite0" or "lite2"); --init keeps its own
    hint_decoder: bool = False  # the hint map also goes straight into the decoder (ModelConfig.hint_decoder)
    hint_p_none: float = 0.5  # share of training crops given no hints
    hint_geometric_p: float = 1 / 8  # otherwise a geometric number of hint points, mean 1/p
    first_trained_block: int = FIRST_TRAINED_BLOCK  # encoder blocks from here on are fine-tuned
    autocast: str = ""  # "bf16": the forward under CPU bf16 autocast (where the CPU's native bf16 is faster)
    keep_norm_stats: bool = False  # BatchNorm statistics stay the start's (a short fine-tune on few photos)
    teacher: Path | None = None  # frozen weights whose output on the clean crop is the target, not the true colours
    teacher_temperature: float = 1.0  # below 1: the teacher's distribution sharpened as the target (more colour)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
