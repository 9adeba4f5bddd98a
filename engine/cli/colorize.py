"""``colorize``: files and folders in, colour photos out, on this machine or on a Ray cluster (``--ray``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..messages import counted, one_line, part_of, printable, short_reason
from .interrupt import first_ctrl_c_cancels
from .report import PhotoReport, print_problems
from .usage import UsageError

if TYPE_CHECKING:

    from ..hints import Hint, HintsFile
    from ..options import BatchSummary, ColorizeSettings, ExportOptions, Job

log = logging.getLogger(__package__)  # records under the command line's one name, engine.cli


def _if_exists(args: argparse.Namespace) -> str:
    return "skip" if args.skip_existing else "overwrite" if args.overwrite else "new_name"


def colorize_command(args: argparse.Namespace) -> int:
    from ..batch.inputs import collect_inputs
    from ..batch.model_choice import chosen
    from ..batch.pipeline import BatchPipeline, RunControl
    from ..colorizer import Colorizer
    from ..named_models import AUTO
    from ..options import ColorizeSettings, ExportOptions
    from ..weights import WeightsError

    weights = args.weights
    if args.model is not None and weights is not None:
        raise UsageError("--model and --weights: give one of them")
    # the default, and "--model auto": the model chosen by the photos' look
    auto = (args.model or AUTO).strip().lower() == AUTO and weights is None
    if not auto and args.model is not None:
        from ..named_models import ModelNameError, model_path

        try:
            weights = model_path(args.model)
        except ModelNameError as err:
            print(f"error: {one_line(str(err), 300)}", file=sys.stderr)  # one line, as `models` would list them
            return 2
    try:
        settings = ColorizeSettings(engine=args.engine, device=args.device, precision=args.precision,
                                    batch_size=args.batch_size, size=args.size, compile=args.compile,
                                    weights=weights, by_look=auto).validated()
        export = ExportOptions(output_dir=args.output, format=args.format, jpeg_quality=args.quality,
                               if_exists=_if_exists(args), colour_inputs=args.colour_inputs,
                               strength=args.strength).validated()
    except ValueError as err:
        raise UsageError(str(err)) from None
    hints_file = _hints_file(args.hints) if args.hints is not None else None
    warnings.simplefilter("ignore")  # library warnings mean nothing to the user; failures are reported per photo
    report = PhotoReport()
    if args.ray:
        return _colorize_on_ray(args.inputs, settings, export, args.ray, report, hints_file)
    jobs, problems = collect_inputs(args.inputs, leave_out=args.output)
    _note_output_inside(args.inputs, args.output)
    print_problems(len(jobs), problems)
    if not jobs:
        return 1
    asked = settings
    settings, routes = _chosen_by_look(settings, jobs, report)
    try:
        colorizer = Colorizer.create(settings)
        others = {m: Colorizer.create(chosen(asked, m)) for m in set(routes.values())}
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
    _say_taken(export, jobs)
    report.start(len(jobs))
    control = RunControl()
    pipeline = BatchPipeline(colorizer, export, hints=hints, measure_look=not report.chosen,
                             routed={i: others[m] for i, m in routes.items()})
    try:
        with first_ctrl_c_cancels(control, lambda: report.cancelled_text(len(jobs), export.output_dir)):
            summary = pipeline.run(jobs, on_result=report, control=control)
    except KeyboardInterrupt:  # an interrupt the handler did not take (raised in a callback)
        control.cancel()
        summary = None
    report.close()
    if summary is None or summary.cancelled and summary.done + summary.skipped + summary.failed < len(jobs):
        print(report.cancelled_text(len(jobs), export.output_dir), file=sys.stderr)
        return 130
    if summary.stopped_reason:
        print(f"error: {one_line(summary.stopped_reason, 300)}", file=sys.stderr)
    print(f"{summary.line()} [{colorizer.description}]")
    _notes(report, summary, settings, export)
    return 1 if report.failed or problems or summary.stopped_reason else 0


def _hints_file(path: Path) -> HintsFile:
    """``--hints FILE`` read, or a one-line usage error saying what is wrong with it."""
    from ..hints import HintsFileError, load_hints_file

    try:
        return load_hints_file(path)
    except HintsFileError as err:
        raise UsageError(one_line(str(err), 300)) from None


def _notes(report: PhotoReport, summary: BatchSummary, settings: ColorizeSettings, export: ExportOptions) -> None:
    """What the person may want to know after the run: outputs under a new name, photos in colour, the model advice."""
    from ..options import ALREADY_IN_COLOUR, Status

    done = [r for r in summary.results if r.status == Status.DONE]
    renamed = [r for r in done if r.renamed and r.output is not None]
    if renamed:
        why = ("a file, an input or another photo of the run had the photo's own name; where it was an earlier "
               "output, --overwrite replaces it and --skip-existing skips the photo"
               if export.if_exists == "new_name" else "an input or another photo of the run had the photo's own name")
        named = _first_few([f"{r.source.name} as '{r.output.name}'" for r in renamed if r.output is not None])
        print(f"note: {counted(len(renamed), 'output')} went under a new name ({named}): {why}")
    if in_colour := [r.source.name for r in done if r.in_colour]:
        print(f"note: {_were(in_colour)} in colour: colorized from {'its' if len(in_colour) == 1 else 'their'} "
              "lightness, the photo's own colours not kept; --colour-inputs skip leaves such photos out")
    if skipped := [r.source.name for r in summary.results
                   if r.status == Status.SKIPPED and r.message == ALREADY_IN_COLOUR]:
        print(f"note: {_were(skipped)} in colour: skipped (--colour-inputs skip)")
    if advice := report.advice(summary, settings.weights):
        print(f"note: {advice}")


def _first_few(names: list[str], most: int = 5) -> str:
    return ", ".join(printable(n) for n in names[:most]) + (", …" if len(names) > most else "")


def _were(names: list[str]) -> str:
    """'2 photos (a.jpg, b.jpg) were', '1 photo (a.jpg) was'."""
    return f"{counted(len(names), 'photo')} ({_first_few(names)}) {'was' if len(names) == 1 else 'were'}"


def _say_taken(export: ExportOptions, jobs: list[Job]) -> None:
    """Before a run that would copy most photos' existing outputs ("photo (1).jpg"): the flags that choose
    otherwise, while Ctrl+C costs nothing.
    """
    from ..batch.planning import copies_to_ask_about

    taken, n = copies_to_ask_about(export, jobs), len(jobs)
    if taken:
        print(f"note: {part_of(taken, n, 'photo')} {'has' if n == 1 else 'have'} an output in {export.output_dir} "
              "already: they will be written again as copies ('photo (1)'); --skip-existing skips them, "
              "--overwrite replaces them", file=sys.stderr)


def _chosen_by_look(settings: ColorizeSettings, jobs: list[Job],
                    report: PhotoReport) -> tuple[ColorizeSettings, dict[int, str]]:
    """``--model auto``: the model for these photos by how a sample of each folder looks, said on the terminal; the
    settings for most of them, and the other model's name for each photo (by job index) whose folder looks otherwise.
    Unchanged, with no routes, where the settings name a model.
    """
    from ..batch.model_choice import chosen, look_by_folder

    if not settings.by_look:
        return settings, {}

    paths = [j.path for j in jobs]
    looks = look_by_folder(paths)
    main = looks.main_model
    print(looks.line())
    report.chosen = looks.overall.sampled > 0  # chosen by look: no advice to choose otherwise
    routes = {jobs[i].index: m for i, m in looks.routes(paths, main).items()}
    return chosen(settings, main), routes


def _colorize_on_ray(inputs: list[Path], settings: ColorizeSettings, export: ExportOptions, address: str,
                     report: PhotoReport, hints_file: HintsFile | None = None) -> int:
    """``colorize --ray``: the messages and exit status of a local run; the summary line adds the cluster's size.
    Auto chooses by the photos this machine can read (a bucket's cannot be: the shipped model), folder by folder;
    the actors load the other model where a photo of it comes.
    """
    import importlib.util

    from ..batch.inputs import collect_inputs
    from ..named_models import BUNDLED

    local = collect_inputs(inputs, leave_out=export.output_dir)[0] if settings.by_look else []
    settings, routes = _chosen_by_look(settings, local, report)
    by_path = {os.path.realpath(j.path): BUNDLED[m] for j in local if (m := routes.get(j.index))}

    from ..batch.cluster import run_on_ray
    from ..weights import DEFAULT_WEIGHTS, WeightsError, read_weights

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
        _note_output_inside(inputs, export.output_dir)
        print_problems(total, problems)
        if total:
            report.start(total)

    try:
        run = run_on_ray(inputs, settings, export, address, report, on_plan=on_plan,
                         hints=(lambda jobs: _matched_hints(hints_file, jobs)) if hints_file is not None else None,
                         measure_look=not report.chosen,
                         routes=lambda jobs: {j.index: by_path[p] for j in jobs if (p := os.path.realpath(j.path))
                                              in by_path})
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
    _notes(report, run.summary, settings, export)
    return 1 if run.summary.failed or run.problems else 0


def _note_output_inside(inputs: list[Path], output: Path) -> None:
    from ..batch.inputs import output_folder_inside

    holder = output_folder_inside(inputs, output, keep_folder_names=len(inputs) > 1)
    if holder is not None:
        print(f"note: the outputs in {printable(str(output))}, inside {printable(str(holder))}, are left out of the "
              "photos (they are colour versions of them)", file=sys.stderr)


def _matched_hints(hints_file: HintsFile, jobs: list[Job]) -> dict[int, tuple[Hint, ...]]:
    """The hints file's points by job index; keys that name no input, or several, are warned about and not used."""
    from ..hints import match_hints, photo_key

    matched = match_hints(hints_file, jobs)
    for key in matched.unmatched:
        print(f"warning: hints file: '{printable(key)}' names no input; its points are not used", file=sys.stderr)
    for key in matched.ambiguous:
        name = key.replace("\\", "/").rsplit("/", 1)[-1]
        some = ", ".join(printable(photo_key(j)) for j in jobs if j.path.name == name)
        print(f"warning: hints file: '{printable(key)}' names more than one input ({one_line(some, 200)}): "
              "name it by its path relative to its input folder; its points are not used", file=sys.stderr)
    return matched.hints
