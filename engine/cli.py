"""Command line: colorize, bench, train, evaluate (``main.py`` sends anything else to the GUI).

Exit codes: 0 all succeeded, 1 some inputs failed (each named on stderr, one line each),
2 usage errors. An unexpected error is one ``error:`` line, after a WARNING with its traceback
for the bug report. ``--verbose`` shows everything the engine logs; ``COLORIZER_LOG_LEVEL``
(DEBUG, INFO, WARNING, ERROR) sets the level without it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .messages import counted, log_level_from_env, one_line, printable, short_reason
from .options import DEVICES, ENGINES, FORMATS, PRECISIONS, Status
from .progress import ProgressBar

if TYPE_CHECKING:
    from .hints import Hint, HintsFile
    from .options import ColorizeSettings, ExportOptions, Job, PhotoResult

log = logging.getLogger(__name__)


class UsageError(Exception):
    pass


NOISY_LOGGERS = ("PIL", "matplotlib", "urllib3", "filelock")


@contextmanager
def logging_to_stderr(level: int) -> Iterator[None]:
    """Log records at ``level`` and above go to the current stderr while the command runs; undone after."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(level)
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(level, before))
    # --verbose is for our own story (device, precision, notes per photo), not the decoders' chunk by chunk.
    quiet = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO))
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)
        for name, lvl in quiet.items():
            logging.getLogger(name).setLevel(lvl)


def _if_exists(args: argparse.Namespace) -> str:
    return "skip" if args.skip_existing else "overwrite" if args.overwrite else "new_name"


def _colorize(args: argparse.Namespace) -> int:
    from .batch.inputs import collect_inputs
    from .batch.pipeline import BatchPipeline, RunControl
    from .colorizer import Colorizer
    from .hints import HintsFileError, load_hints_file
    from .options import ColorizeSettings, ExportOptions
    from .weights import WeightsError

    try:
        settings = ColorizeSettings(engine=args.engine, device=args.device, precision=args.precision,
                                    batch_size=args.batch_size, size=args.size, compile=args.compile,
                                    weights=args.weights).validated()
        export = ExportOptions(output_dir=args.output, format=args.format, jpeg_quality=args.quality,
                               if_exists=_if_exists(args),
                               colour_inputs=args.colour_inputs, strength=args.strength).validated()
    except ValueError as err:
        raise UsageError(str(err)) from None
    hints_file: HintsFile | None = None
    if args.hints is not None:
        try:
            hints_file = load_hints_file(args.hints)
        except HintsFileError as err:
            raise UsageError(one_line(str(err), 300)) from None
    warnings.simplefilter("ignore")  # library warnings mean nothing to the user; failures are reported per photo
    report = _PhotoReport()
    if args.ray:
        return _colorize_on_ray(args.inputs, settings, export, args.ray, report, hints_file)
    jobs, problems = collect_inputs(args.inputs)
    _print_problems(len(jobs), problems)
    if not jobs:
        return 1
    try:
        colorizer = Colorizer.create(settings)
    except WeightsError as err:
        print(f"error: {short_reason(err, 300)}", file=sys.stderr)
        return 1
    except ValueError as err:
        raise UsageError(str(err)) from None
    log.info("%s; engine %s, batch %d, working size %d", counted(len(jobs), "photo"), colorizer.description,
             settings.batch_size, settings.size)
    if hints_file is not None and not colorizer.takes_hints:
        raise UsageError("--hints: these weights take no colour hints (use weights trained with --hint-channels 3)")
    hints = _matched_hints(hints_file, jobs) if hints_file is not None else {}
    report.start(len(jobs))
    control = RunControl()
    pipeline = BatchPipeline(colorizer, export, hints=hints)
    try:
        summary = pipeline.run(jobs, on_result=report, control=control)
    except KeyboardInterrupt:
        control.cancel()
        report.close()
        print(report.cancelled_text(len(jobs), export.output_dir), file=sys.stderr)
        return 130
    report.close()
    if summary.stopped_reason:
        print(f"error: {one_line(summary.stopped_reason, 300)}", file=sys.stderr)
    print(f"{summary.line()} [{colorizer.description}]")
    return 1 if report.failed or problems or summary.stopped_reason else 0


class _PhotoReport:
    """Each finished photo on the terminal, the same for a local and a Ray run: the progress bar, and on
    stderr a failure's reason or a done photo's note (e.g. colorized on the CPU after running out of GPU memory).
    """

    def __init__(self) -> None:
        self.bar: ProgressBar | None = None
        self.failed = 0
        self.skipped = 0
        self.done = 0

    def start(self, total: int) -> None:
        self.bar = ProgressBar(total, unit="photos")

    def __call__(self, r: PhotoResult) -> None:
        log.debug("%s: %s -> %s (decode %.0f ms, model %.0f ms, write %.0f ms, %dx%d)", printable(r.source), r.status,
                  printable(r.output) if r.output else "-", r.decode_ms, r.infer_ms, r.encode_ms, r.width, r.height)
        self.skipped += r.status == Status.SKIPPED
        self.done += r.status == Status.DONE
        if self.bar is not None:
            self.bar.update(self.bar.count + 1, one_line(r.source.name, 40), skipped=self.skipped)
        if r.status == Status.FAILED:
            self.failed += 1
            self.close()
            print(f"{printable(r.source)}: {one_line(r.message, 300) or 'failed'}", file=sys.stderr)
        elif r.status == Status.DONE and r.message:
            self.close()
            print(f"{printable(r.source)}: note: {one_line(r.message, 300)}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def cancelled_text(self, total: int, output_dir: Path) -> str:
        """What Ctrl-C leaves behind, and how to go on from there."""
        others = ", ".join(f"{n} {what}" for n, what in ((self.skipped, "skipped"), (self.failed, "failed")) if n)
        return (f"cancelled: {self.done} of {total} photos written to {printable(output_dir)}"
                f"{f' ({others})' if others else ''}; run the same command with --skip-existing to go on "
                "where it stopped")


def _print_problems(total: int, problems: list[str]) -> None:
    """Inputs that could not be read as photos, and whether any photo was found at all."""
    for p in problems:
        print(f"error: {printable(p)}", file=sys.stderr)
    if not total:
        print("error: no photos found in the given inputs", file=sys.stderr)


def _colorize_on_ray(inputs: list[Path], settings: ColorizeSettings, export: ExportOptions, address: str,
                     report: _PhotoReport, hints_file: HintsFile | None = None) -> int:
    """``colorize --ray``: the messages and exit status of a local run; the summary line adds the cluster's size."""
    import importlib.util

    from .batch.cluster import run_on_ray
    from .weights import DEFAULT_WEIGHTS, WeightsError, read_weights

    if importlib.util.find_spec("ray") is None:
        print("error: --ray needs Ray: pip install 'colorizer[cluster]'", file=sys.stderr)
        return 1
    try:
        blob = read_weights(settings.weights if settings.weights is not None else DEFAULT_WEIGHTS)
    except WeightsError as err:
        print(f"error: {short_reason(err, 300)}", file=sys.stderr)
        return 1
    if hints_file is not None and not int(blob.get("config", {}).get("hint_channels", 0)):
        raise UsageError("--hints: these weights take no colour hints (use weights trained with --hint-channels 3)")

    def on_plan(total: int, problems: list[str]) -> None:
        _print_problems(total, problems)
        if total:
            report.start(total)

    try:
        run = run_on_ray(inputs, settings, export, address, report, on_plan=on_plan,
                         hints=(lambda jobs: _matched_hints(hints_file, jobs)) if hints_file is not None else None)
    except ConnectionError as err:
        print(f"error: cannot reach the Ray cluster at {address}: {short_reason(err)}", file=sys.stderr)
        return 1
    except ValueError as err:
        raise UsageError(str(err)) from None
    finally:
        report.close()
    if not run.summary.total:
        return 1
    print(run.line())
    return 1 if run.summary.failed or run.problems else 0


def _matched_hints(hints_file: HintsFile, jobs: list[Job]) -> dict[int, tuple[Hint, ...]]:
    """The hints file's points by job index; keys that name no input, or several, are warned about and not used."""
    from .hints import match_hints, photo_key

    matched = match_hints(hints_file, jobs)
    for key in matched.unmatched:
        print(f"warning: hints file: '{printable(key)}' names no input; its points are not used", file=sys.stderr)
    for key in matched.ambiguous:
        name = key.replace("\\", "/").rsplit("/", 1)[-1]
        some = ", ".join(printable(photo_key(j)) for j in jobs if j.path.name == name)
        print(f"warning: hints file: '{printable(key)}' names more than one input ({one_line(some, 200)}): "
              "name it by its path relative to its input folder; its points are not used", file=sys.stderr)
    return matched.hints


def _train(args: argparse.Namespace) -> int:
    from .training.train import TrainSettings, train

    s = TrainSettings(data=args.data, out=args.out, work=args.work, steps=args.steps, batch=args.batch,
                      size=args.size, lr=args.lr, seed=args.seed, max_minutes=args.max_minutes,
                      resume=args.resume, init=args.init, freeze_steps=args.freeze_steps,
                      val_every=args.val_every, threads=args.threads, reg_weight=args.reg_weight,
                      reg_beta=args.reg_beta, rebalance=args.rebalance, ema_decay=args.ema_decay,
                      tune_fraction=args.tune_fraction, colour_target=args.colour_target,
                      encoder_lr_scale=args.encoder_lr_scale, crop_min=args.crop_min,
                      gamma_jitter=args.gamma_jitter, balance_groups=args.balance_groups,
                      degrade_share=args.degrade_share, degrade_strength=args.degrade_strength,
                      extra_data=args.extra, extra_share=args.extra_share, hint_channels=args.hint_channels,
                      encoder=args.encoder, hint_decoder=args.hint_decoder, hint_p_none=args.hint_p_none,
                      hint_geometric_p=args.hint_geometric_p,
                      first_trained_block=args.first_trained_block, autocast="bf16" if args.bf16 else args.autocast)
    if not args.data.is_dir():
        raise UsageError(f"{args.data} is not a folder")
    if args.hint_decoder and not args.hint_channels and args.init is None:
        raise UsageError("--hint-decoder needs a model that reads hints: add --hint-channels 3")
    if args.extra is not None and not args.extra.is_dir():
        raise UsageError(f"--extra {args.extra} is not a folder")
    if not 0.0 < args.extra_share < 1.0:
        raise UsageError(f"--extra-share {args.extra_share}: must be between 0 and 1")
    card = train(s)
    print(f"trained {card['steps']} steps in {card['minutes']} min -> {args.out}")
    return 0


def _readout(args: argparse.Namespace) -> int:
    from .training.readout import ReadoutSettings, choose_readout_elsewhere

    if not args.weights.is_file():
        raise UsageError(f"{args.weights}: no such weights file")
    if not args.photos.is_dir():
        raise UsageError(f"{args.photos} is not a folder")
    if args.hints_only and args.min_gain != 0.0:
        raise UsageError("--min-gain chooses the automatic read-out, which --hints-only keeps as it is")
    if args.hint_colour_target is not None and not 0.0 < args.hint_colour_target <= 2.0:
        raise UsageError(f"--hint-colour-target {args.hint_colour_target}: a share of the colour, above 0")
    card = choose_readout_elsewhere(ReadoutSettings(weights=args.weights, photos=args.photos, out=args.out,
                                                    min_gain_db=args.min_gain, size=args.size,
                                                    hint_colour_target=args.hint_colour_target,
                                                    hints_only=args.hints_only))
    r = card["readout"]
    if args.hints_only:
        h = r["hint_spread"]
        print(f"hint spread on {len(h.get('search', []))} settings: reach {h['reach']}, lightness "
              f"{h['lightness']}, floor {h['floor']}, colour {h['colour']} ({h['gain_over_no_spread_db']:+.2f} dB over "
              f"no spread at {h['hints']} hints) -> {args.out}")
        return 0
    print(f"read-out on {r['photos']} photos: temperature {r['temperature']}, doubt pull {r['doubt_pull']}, "
          f"chroma gain {r['chroma_gain']} ({r['gain_db']:+.2f} dB over grey, colourfulness "
          f"{r['colourfulness_ratio']:.2f}{'' if r['met'] else '; no read-out reaches --min-gain'}) -> {args.out}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import BenchSettings, run_bench

    return run_bench(BenchSettings(size=args.size, batches=tuple(args.batch), json_path=args.json,
                                   profile=args.profile, repeat=args.repeat, device=args.device,
                                   weights=args.weights, threads=args.threads, hints=args.hints,
                                   encoders=tuple(args.encoders or ()), peers=args.peers, rounds=args.rounds,
                                   cuda_graphs=not args.no_cuda_graphs))


def _evaluate(args: argparse.Namespace) -> int:
    from .training.evaluate import EvalSettings, run_evaluate

    if not args.folder.is_dir():
        raise UsageError(f"{args.folder} is not a folder")
    if args.against is not None and not args.against.is_file():
        raise UsageError(f"{args.against}: no such weights file")
    return run_evaluate(EvalSettings(folder=args.folder, split=args.split, size=args.size,
                                     weights=args.weights, json_path=args.json, markdown_path=args.markdown,
                                     examples_dir=args.examples, examples=args.n_examples,
                                     example_names=tuple(args.example_names or ()),
                                     chroma_gain=args.chroma_gain, doubt_pull=args.doubt_pull,
                                     against=args.against,
                                     hints=tuple(args.hints or ()), degrade=args.degrade,
                                     degrade_seed=args.degrade_seed))


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

    c = sub.add_parser("colorize", help="colorize files and folders", parents=[common],
                       formatter_class=_DefaultsHelp)
    c.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="photos and folders (walked recursively)")
    c.add_argument("--output", "-o", type=Path, required=True, metavar="DIR",
                   help="where the colour photos go, at each input's path relative to its folder")
    c.add_argument("--engine", choices=ENGINES, default="optimized", help="optimized, or the plain baseline")
    c.add_argument("--device", choices=DEVICES, default="auto", help="auto: CUDA when present, else the CPU")
    c.add_argument("--precision", choices=PRECISIONS, default="auto",
                   help="auto: bf16 on CPUs with native bf16, fp16 on CUDA, else fp32")
    c.add_argument("--batch-size", type=int, default=4, help="photos per model call")
    c.add_argument("--size", type=int, default=512, help="working size (longer side) the model runs at")
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
    c.add_argument("--weights", type=Path, help="weights file (default: the shipped model)")
    c.add_argument("--hints", type=Path, metavar="FILE",
                   help='colour hints, JSON: {"version": 1, "photos": {"NAME": [{"x": 0.25, "y": 0.4, "rgb": '
                   '[200, 150, 120]}]}}; NAME is the path relative to its input folder, or a unique file name; '
                   "x, y relative (0..1) in the upright photo. Needs weights trained with hints")
    c.add_argument("--ray", metavar="ADDRESS", help="run on Ray: 'local' (this machine), 'auto' or ray://host:10001 "
                   "(needs the 'cluster' extra)")
    c.set_defaults(func=_colorize)

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
    b.set_defaults(func=_bench)

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
    t.add_argument("--encoder-lr-scale", type=float, default=0.5, help="encoder learning rate vs the decoder's")
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
                   help="bf16: the forward under CPU bf16 autocast (only where the CPU has native bf16)")
    t.add_argument("--bf16", action="store_true", help="same as --autocast bf16")
    t.set_defaults(func=_train)

    r = sub.add_parser("readout", parents=[common],
                       help="choose trained weights' read-out again, on photos from sources the training never saw")
    r.add_argument("weights", type=Path, help="trained weights (their tensors are copied unchanged)")
    r.add_argument("photos", type=Path, help="a folder of colour photos from sources the training never used")
    r.add_argument("--out", type=Path, required=True, help="the new weights file (a card .json/.md beside it)")
    r.add_argument("--min-gain", type=float, default=0.0, metavar="DB",
                   help="the most colourful read-out at least this much better than grey on them (default 0)")
    r.add_argument("--size", type=int, default=512, help="working size the photos are measured at (as colorize)")
    r.add_argument("--hint-colour-target", type=float, metavar="SHARE",
                   help="also choose a chroma gain for hinted photos that keeps this share of the colour at "
                        "10 hints (default: none, the hint spread alone, for the best PSNR)")
    r.add_argument("--hints-only", action="store_true",
                   help="keep the automatic read-out as it is and choose only the hint spread")
    r.set_defaults(func=_readout)

    e = sub.add_parser("evaluate", help="quality report on a folder of colour photos", parents=[common])
    e.add_argument("folder", type=Path)
    e.add_argument("--split", choices=("all", "validation", "tuning", "train"), default="all")
    e.add_argument("--size", type=int, default=512)
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
    e.set_defaults(func=_evaluate)
    return p


def log_level(args: argparse.Namespace) -> tuple[int, str | None]:
    """``--verbose``, else ``COLORIZER_LOG_LEVEL``, else WARNING (INFO for ``train``, which reports as it goes)."""
    if getattr(args, "verbose", False):
        return logging.DEBUG, None
    return log_level_from_env(logging.INFO if args.command == "train" else logging.WARNING)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    level, problem = log_level(args)
    with logging_to_stderr(level):
        if problem:
            log.warning("%s", problem)
        try:
            return int(args.func(args))
        except UsageError as err:
            parser.error(str(err))  # exits 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        except Exception as err:  # noqa: BLE001 - the user gets one line, the log the traceback
            log.warning("unexpected error in %s (please report it with this traceback)", args.command,
                        exc_info=True)
            print(f"error: {short_reason(err, 300)}", file=sys.stderr)
            return 1
    return 0


def console_main() -> None:
    sys.exit(main(sys.argv[1:]))
