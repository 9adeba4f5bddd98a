"""The command line's parser: one function per subcommand, each adding its options and the command it runs.

Flags, help texts and defaults are the command line's interface: scripts and docs depend on them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..options import DEVICES, ENGINES, FORMATS, PRECISIONS, WORKING_SIZE
from .colorize import colorize_command
from .commands import bench_command, evaluate_command, readout_command, train_command
from .tune import models_command, tune_command

Subcommands = argparse._SubParsersAction  # what ``add_subparsers`` returns: each subcommand is added to it


class _DefaultsHelp(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in the help, except where there is none to show or the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="main.py", description="Colorizer: bring grayscale photos to colour. "
                                "Without a subcommand, opens the app: main.py [PATH...] [--output DIR] [--start]",
                                epilog="COLORIZER_LOG_LEVEL=DEBUG|INFO|WARNING|ERROR sets how much is logged.")
    sub = p.add_subparsers(dest="command")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbose", "-v", action="store_true",
                        help="log everything (level DEBUG), as COLORIZER_LOG_LEVEL=DEBUG does")
    _add_colorize(sub, common)
    _add_bench(sub, common)
    _add_train(sub, common)
    _add_readout(sub, common)
    _add_evaluate(sub, common)
    _add_tune(sub, common)
    _add_models(sub, common)
    return p


def _add_colorize(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``colorize INPUT... --output DIR``: the batch run's options, each default shown in the help."""
    c = sub.add_parser("colorize", help="colorize files and folders", parents=[common],
                       formatter_class=_DefaultsHelp)
    c.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="photos and folders (walked recursively)")
    c.add_argument("--output", "-o", type=Path, required=True, metavar="DIR",
                   help="where the colour photos go, at each input's path relative to its folder")
    c.add_argument("--engine", choices=ENGINES, default="optimized",
                   help="optimized; the plain baseline; or openvino (CPU only, the optional extra 'openvino'; "
                        "colour hints run on optimized)")
    c.add_argument("--device", choices=DEVICES, default="auto", help="auto: CUDA when present, else the CPU")
    c.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="auto: fp16 on CUDA; bf16 on CPUs whose native bf16 runs faster than fp32 (a probe), else fp32")
    c.add_argument("--batch-size", type=int, default=4, help="photos per model call")
    c.add_argument("--size", type=int, default=WORKING_SIZE, help="working size (longer side) the model runs at")
    c.add_argument("--format", choices=FORMATS, default="keep", help="output format (keep: the input's)")
    c.add_argument("--quality", type=int, default=92, help="JPEG/WebP quality")
    exists = c.add_mutually_exclusive_group()
    exists.add_argument("--skip-existing", action="store_true", help="skip photos whose output exists (resume)")
    exists.add_argument("--overwrite", action="store_true",
                        help="replace outputs that exist (without this or --skip-existing: a new name, "
                             "'photo (1).jpg')")
    c.add_argument("--colour-inputs", choices=("colorize", "skip"), default="colorize",
                   help="photos already in colour: colorize from their luminance, or skip")
    c.add_argument("--strength", type=float, default=1.0, metavar="S",
                   help="colour strength, 0 to 2: 1.0 = the model's own colour; 0 = grey")
    c.add_argument("--compile", action="store_true", help="torch.compile the optimized runtime")
    c.add_argument("--weights", type=Path, help="weights file (default: the model --model names)")
    c.add_argument("--model", metavar="NAME",
                   help="a model by name: 'auto' (the default: 'old-prints' for a run whose photos look like old "
                   "prints' scans, 'shipped' otherwise), 'shipped', 'old-prints' or one "
                   "made by tune (see: models)")
    c.add_argument("--hints", type=Path, metavar="FILE",
                   help='colour hints, JSON: {"version": 1, "photos": {"NAME": [{"x": 0.25, "y": 0.4, "rgb": '
                   '[200, 150, 120]}]}}; NAME is the path relative to its input folder, or a unique file name; '
                   "x, y relative (0..1) in the upright photo. Needs weights trained with hints")
    c.add_argument("--ray", metavar="ADDRESS", help="run on Ray: 'local' (this machine), 'auto' or ray://host:10001 "
                   "(needs the 'cluster' extra)")
    c.set_defaults(func=colorize_command)


def _add_bench(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``bench``: baseline vs optimized, or instead the hints, encoders or peers comparison."""
    b = sub.add_parser("bench", help="baseline vs optimized, side by side", parents=[common])
    b.add_argument("--size", type=int, default=512)
    b.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    b.add_argument("--json", type=Path)
    b.add_argument("--profile", action="store_true")
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    b.add_argument("--threads", type=int)
    b.add_argument("--weights", type=Path)
    b.add_argument("--hints", action="store_true",
                   help="instead: ms from colour hints to a preview (working size --size, batch 1, 800 px preview), "
                   "with and without hints")
    b.add_argument("--encoders", nargs="+", choices=("lite0", "lite2"), metavar="ENCODER",
                   help="instead: the optimized runtime with each encoder (lite0, lite2), side by side")
    b.add_argument("--peers", action="store_true",
                   help="instead: ours beside the model exported to ONNX on ONNX Runtime and OpenVINO, in one "
                   "process, rounds taking turns (needs the 'peers' extra)")
    b.add_argument("--rounds", type=int, default=9, help="--peers: rounds taking turns (default: 9)")
    b.add_argument("--no-cuda-graphs", action="store_true", help="on CUDA: launch every call anew, no graph replay")
    b.set_defaults(func=bench_command)


def _add_train(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``train DATA``: the training run's options, as ``TrainSettings`` takes them."""
    t = sub.add_parser("train", help="train colorization weights on a folder of colour photos", parents=[common])
    t.add_argument("data", type=Path)
    t.add_argument("--out", type=Path, default=Path("resources/models/colorizer.pt"))
    t.add_argument("--work", type=Path, default=Path("runs/train"), help="checkpoints and logs")
    t.add_argument("--steps", type=int, default=5000)
    t.add_argument("--batch", type=int, default=12)
    t.add_argument("--size", type=int, default=224)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--freeze-steps", type=int, default=600)
    t.add_argument("--val-every", type=int, default=250)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--max-minutes", type=float)
    t.add_argument("--resume", action="store_true")
    t.add_argument("--init", type=Path, help="fine-tune from these weights")
    t.add_argument("--threads", type=int)
    t.add_argument("--reg-weight", type=float, default=5.0, help="weight of the ab regression loss")
    t.add_argument("--reg-beta", type=float, default=0.05, help="smooth-L1 beta (larger: closer to L2)")
    t.add_argument("--rebalance", type=float, default=0.5, help="class rebalancing mix (1.0: none)")
    t.add_argument("--encoder-lr-scale", type=float, default=0.5, help="encoder learning rate, a share of --lr")
    t.add_argument("--decoder-lr-scale", type=float, default=1.0,
                   help="decoder, head and refinement learning rate (0: they stay as --init made them)")
    t.add_argument("--ema-decay", type=float, default=0.0, help="ship a moving average of the weights (e.g. 0.998)")
    t.add_argument("--tune-fraction", type=float, default=0.0,
                   help="share of photos held out to choose the snapshot and read-out on (e.g. 0.1; 0: none)")
    t.add_argument("--colour-target", type=float, default=0.85,
                   help="with tuning photos: share of the originals' colourfulness the read-out must keep")
    t.add_argument("--crop-min", type=float, default=0.3, help="smallest crop, as a share of the shorter side")
    t.add_argument("--gamma-jitter", type=float, default=0.0, help="log-gamma jitter on L (e.g. 0.2)")
    t.add_argument("--degrade-share", type=float, default=0.0, metavar="P",
                   help="share of crops given as old-print scans of themselves (faded, grainy, soft, toned, scratched,"
                   " JPEG; the target stays the clean colour)")
    t.add_argument("--degrade-strength", type=float, default=1.0, help="--degrade-share: 0 mild .. 1 as documented")
    t.add_argument("--balance-groups", action="store_true",
                   help="draw photos by MANIFEST group (sqrt of size; the one-source ifct food set at most 15%%)")
    t.add_argument("--extra", type=Path, metavar="DIR",
                   help="more training photos (e.g. the cut-outs), drawn at their own share; their validation "
                        "side, and with --tune-fraction their tuning side, stay out")
    t.add_argument("--extra-share", type=float, default=0.1, metavar="F", help="the --extra photos' share of samples")
    t.add_argument("--hint-channels", type=int, choices=(0, 3), default=0,
                   help="3: a model that also reads colour hints (drawn from each crop's colours in training)")
    t.add_argument("--encoder", choices=("lite0", "lite2"), default="lite0",
                   help="the ImageNet encoder of a fresh model (EfficientNet-Lite0 or the wider, deeper Lite2)")
    t.add_argument("--hint-decoder", action="store_true",
                   help="the hint map also goes straight into each decoder stage and the refinement")
    t.add_argument("--hint-p-none", type=float, default=0.5, metavar="P", help="share of crops trained without hints")
    t.add_argument("--hint-geometric-p", type=float, default=1 / 8, metavar="P",
                   help="otherwise a geometric number of hint points, mean 1/P")
    t.add_argument("--first-trained-block", type=int, default=5, metavar="N",
                   help="encoder blocks from N on are fine-tuned (earlier ones stay as ImageNet made them)")
    t.add_argument("--autocast", choices=("none", "bf16"), default="none",
                   help="bf16: the forward under CPU bf16 autocast (only where the CPU's native bf16 is faster)")
    t.add_argument("--bf16", action="store_true", help="same as --autocast bf16")
    t.add_argument("--teacher", type=Path, metavar="WEIGHTS",
                   help="learn to give, for each crop as the network sees it (an old print's scan with "
                        "--degrade-share), what these frozen weights give for the clean crop, instead of its true "
                        "colours; the weights ship with the teacher's read-out")
    t.add_argument("--teacher-temperature", type=float, default=1.0, metavar="T",
                   help="--teacher: its logits divided by T as the target (below 1: sharper, more colourful)")
    t.add_argument("--keep-norm-stats", action="store_true",
                   help="BatchNorm keeps the start's statistics (its scale and shift still learn)")
    t.set_defaults(func=train_command)


def _add_readout(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``readout WEIGHTS PHOTOS --out FILE``: the read-out chosen again on photos the training never saw."""
    r = sub.add_parser("readout", parents=[common],
                       help="choose trained weights' read-out again, on photos from sources the training never saw")
    r.add_argument("weights", type=Path, help="trained weights (their tensors are copied unchanged)")
    r.add_argument("photos", type=Path, help="a folder of colour photos from sources the training never used")
    r.add_argument("--out", type=Path, required=True, help="the new weights file (a card .json/.md beside it)")
    r.add_argument("--min-gain", type=float, default=0.0, metavar="DB",
                   help="the most colourful read-out at least this much better than grey on them (default 0)")
    r.add_argument("--size", type=int, default=WORKING_SIZE,
                   help="working size the photos are measured at (as colorize)")
    r.add_argument("--hint-colour-target", type=float, metavar="SHARE",
                   help="also choose a chroma gain for hinted photos that keeps this share of the colour at "
                        "10 hints (default: none, the hint spread alone, for the best PSNR)")
    r.add_argument("--hints-only", action="store_true",
                   help="keep the automatic read-out as it is and choose only the hint spread")
    r.add_argument("--spread-rule", choices=("local", "contained", "psnr"), default="local",
                   help="local (default): the hint spread whose lone hint least changes the parts of another "
                        "colour, within 0.3 dB of the best PSNR at 10 hints; contained: the same, counting an "
                        "off-colour hint's leak too; psnr: that best (the rule before)")
    r.set_defaults(func=readout_command)


def _add_evaluate(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``evaluate FOLDER``: the quality report, and what it may compare."""
    e = sub.add_parser("evaluate", help="quality report on a folder of colour photos", parents=[common])
    e.add_argument("folder", type=Path)
    e.add_argument("--split", choices=("all", "validation", "tuning", "train"), default="all")
    e.add_argument("--size", type=int, default=WORKING_SIZE)
    e.add_argument("--weights", type=Path)
    e.add_argument("--json", type=Path)
    e.add_argument("--markdown", type=Path)
    e.add_argument("--examples", type=Path, help="save before/after pictures here")
    e.add_argument("--n-examples", type=int, default=4)
    e.add_argument("--example-names", nargs="+", metavar="NAME", help="these photos among the examples too")
    e.add_argument("--chroma-gain", type=float, help="instead of the model's own (to see the trade-off)")
    e.add_argument("--doubt-pull", type=float, metavar="P",
                   help="instead of the model's own pull toward grey where its colour is unsure (0: none)")
    e.add_argument("--against", type=Path, metavar="WEIGHTS",
                   help="compare with another weights file photo by photo (e.g. before and after fine-tuning)")
    e.add_argument("--hints", type=int, nargs="+", metavar="N",
                   help="also colour with N simulated colour hints per photo (e.g. 0 1 5 10 50): the curve")
    e.add_argument("--degrade", action="store_true",
                   help="also on seeded old-print scans of the photos (faded, grainy, soft, toned, scratched, JPEG), "
                   "judged on colour alone, side by side with the clean grey copies")
    e.add_argument("--degrade-seed", type=int, default=0, help="--degrade: another seed, another set of scans")
    e.set_defaults(func=evaluate_command)


def _add_tune(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``tune PHOTOS --name NAME``: the shipped model fine-tuned on a person's own colour photos."""
    t = sub.add_parser("tune", help="teach the model from your own colour photos (saved under a name)",
                       parents=[common], formatter_class=_DefaultsHelp)
    t.add_argument("photos", nargs="+", type=Path, metavar="PHOTOS", help="colour photos and folders of them")
    t.add_argument("--name", required=True, help="the tuned model's name (colorize --model NAME uses it)")
    t.add_argument("--minutes", type=float, default=10.0, help="time to train, about")
    t.add_argument("--resume", action="store_true", help="go on with a tune that was stopped")
    t.add_argument("--replace", action="store_true", help="replace a tuned model of the same name")
    t.add_argument("--base", metavar="MODEL", help="tune this model instead of the shipped one: a model's name "
                   "(e.g. old-prints, see: models) or a weights file")
    t.add_argument("--recipe", choices=("r1", "r2", "r3"), help=argparse.SUPPRESS)  # the candidates compared
    t.add_argument("--threads", type=int, help="CPU threads (default: all)")
    t.add_argument("--progress-json", action="store_true",
                   help="print progress as one JSON object per line on stdout (for the app)")
    t.add_argument("--batch", type=int, default=12, help=argparse.SUPPRESS)  # tests: a tiny, fast tune
    t.add_argument("--crop", type=int, default=224, help=argparse.SUPPRESS)
    t.set_defaults(func=tune_command)


def _add_models(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """``models``: the shipped model and the tuned ones."""
    m = sub.add_parser("models", help="list the models: the shipped one and those made by tune", parents=[common])
    m.set_defaults(func=models_command)
