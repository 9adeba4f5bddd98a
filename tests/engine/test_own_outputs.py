"""A run never takes its own outputs, or the files systems keep beside photos, for photos to colorize."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
from helpers import colour_photo, random_model, write_grey

from engine import cli as engine_cli
from engine.batch.inputs import collect_inputs, output_folder_inside
from engine.batch.planning import EXISTS, OutputPlanner
from engine.imageio import encode, made_here
from engine.options import ExportOptions
from engine.weights import save_weights


def write_colour(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), colour_photo(40, 50, seed))
    return path


def names(jobs, root: Path) -> list[str]:
    return [j.path.relative_to(root).as_posix() for j in jobs]


def test_hidden_files_mac_twins_and_server_thumbnail_folders_are_not_walked(tmp_path):
    for rel in ("scan.jpg", "._scan.jpg", ".hidden.jpg", ".thumbnails/scan.jpg", "@eaDir/SYNO_THUMB.jpg",
                "__MACOSX/scan.jpg", "1952/beach.jpg"):
        write_grey(tmp_path / "box" / rel, 20, 30)
    jobs, problems = collect_inputs([tmp_path / "box"])
    assert names(jobs, tmp_path / "box") == ["scan.jpg", "1952/beach.jpg"] and not problems
    jobs, _ = collect_inputs([tmp_path / "box" / ".hidden.jpg"])  # given by name, it is a photo
    assert len(jobs) == 1


def test_an_output_folder_inside_the_input_folder_is_left_out_of_the_walk(tmp_path):
    for rel in ("a.png", "sub/b.png", "colour/a.png", "colour/sub/b.png"):
        write_grey(tmp_path / "in" / rel, 20, 30)
    jobs, _ = collect_inputs([tmp_path / "in"], leave_out=tmp_path / "in" / "colour")
    assert names(jobs, tmp_path / "in") == ["a.png", "sub/b.png"]
    assert output_folder_inside([tmp_path / "in"], tmp_path / "in" / "colour") == tmp_path / "in"
    assert output_folder_inside([tmp_path / "in"], tmp_path / "out") is None
    assert output_folder_inside([tmp_path / "in"], tmp_path / "in" / "new") is None  # nothing there to leave out
    assert output_folder_inside([tmp_path / "in"], tmp_path / "in") is None  # the same folder: not below it
    # The output folder given as the input itself is walked: colorizing one's outputs again is a choice.
    assert len(collect_inputs([tmp_path / "in" / "colour"], leave_out=tmp_path / "in" / "colour")[0]) == 2


def test_colorize_run_twice_into_a_folder_inside_its_input_colours_the_same_photos(tmp_path, capsys):
    weights = tmp_path / "model.pt"
    save_weights(random_model(), weights)
    for i in range(3):
        write_grey(tmp_path / "in" / f"p{i}.png", 40, 50, i)
    args = ["colorize", str(tmp_path / "in"), "--output", str(tmp_path / "in" / "out"), "--weights", str(weights),
            "--size", "64"]
    assert engine_cli.main(args) == 0
    assert engine_cli.main([*args, "--overwrite"]) == 0
    out, err = capsys.readouterr()
    assert [line.split(" in ")[0] for line in out.splitlines() if " photos/s" in line] == ["3 photos"] * 2
    assert sorted(p.name for p in (tmp_path / "in" / "out").iterdir()) == ["p0.png", "p1.png", "p2.png"]
    assert f"note: the outputs in {tmp_path / 'in' / 'out'}, inside {tmp_path / 'in'}, are left out" in err


def test_an_output_folder_that_is_the_folder_given_is_written_into_not_taken_for_outputs(tmp_path):
    """The window keeps a folder's name (its root is the folder's parent): Export set to the folder itself writes
    into "scans/scans/", as before; nothing there is an earlier output.
    """
    scans = tmp_path / "scans"
    write_grey(scans / "a.png", 20, 30)
    jobs, _ = collect_inputs([scans], keep_folder_names=True)
    planner = OutputPlanner(ExportOptions(scans), jobs)
    assert [planner.plan(j) for j in jobs] == [(scans / "scans" / "a.png", "")]


def write_output(path: Path, seed: int = 0) -> Path:
    """As a run writes its outputs: with the app's mark."""
    path.parent.mkdir(parents=True, exist_ok=True)
    encode(path, cv2.cvtColor(colour_photo(40, 50, seed), cv2.COLOR_BGR2RGB))
    return path


@pytest.mark.parametrize("pattern", ["{stem}", "{stem}_colour"])
@pytest.mark.parametrize("ext", [".png", ".jpg"])
def test_outputs_an_earlier_run_wrote_beside_the_photos_are_left_out_and_taken_as_their_outputs(
        tmp_path, pattern, ext):
    folder = tmp_path / "scans"
    x = write_grey(folder / f"x{ext}", 20, 30)
    own = "x (1)" if pattern == "{stem}" else "x_colour"
    copy = write_output(folder / f"{own}{ext}")
    copy_of_copy = write_output(folder / (f"{own} (1){ext}" if pattern == "{stem}" else f"x_colour_colour{ext}"))
    assert made_here(copy) and not made_here(x)
    jobs, _ = collect_inputs([folder])
    for if_exists in ("overwrite", "skip", "new_name"):
        planner = OutputPlanner(ExportOptions(folder, name_pattern=pattern, if_exists=if_exists), jobs)
        plans = {j.path: planner.plan(j) for j in jobs}
        assert plans[copy] == (copy, f"a colour version of 'x{ext}' beside it: an earlier run's output")
        assert plans[copy_of_copy][1].startswith("a colour version of")
        if if_exists == "overwrite":
            assert plans[x] == (copy, "")  # replaces its earlier output
        elif if_exists == "skip":
            assert plans[x] == (copy, EXISTS)  # resumes: its output is there
        else:
            assert plans[x][1] == "" and not plans[x][0].exists()  # a new copy, never over the earlier one


def test_a_photo_named_like_a_copy_without_the_mark_is_a_photo_and_never_written_over(tmp_path):
    """'y (1).jpg' beside 'y.jpg', in colour (a browser's second download), in a folder written into itself."""
    folder = tmp_path / "downloads"
    y = write_grey(folder / "y.jpg", 20, 30, 0)
    twin = folder / "y (1).jpg"
    assert cv2.imwrite(str(twin), colour_photo(40, 50, 1))
    before = twin.read_bytes()
    jobs, _ = collect_inputs([folder])
    for if_exists in ("overwrite", "skip", "new_name"):
        planner = OutputPlanner(ExportOptions(folder, if_exists=if_exists), jobs)
        plans = {j.path: planner.plan(j) for j in jobs}
        assert plans[twin] == (folder / "y (1) (1).jpg", "")  # colorized as a photo of its own
        assert plans[y] == (folder / "y (2).jpg", "")  # neither input is written over or skipped for
    assert twin.read_bytes() == before


def test_an_earlier_output_owns_no_name_a_photo_whose_format_changes_to_it_would_take(tmp_path):
    """p.gif is written as PNG; an earlier run's p.png beside it is its output, to replace, not a photo's own name."""
    from PIL import Image

    folder = tmp_path / "scans"
    folder.mkdir()
    Image.fromarray(cv2.imread(str(write_grey(tmp_path / "g.png", 30, 20, 2)), cv2.IMREAD_GRAYSCALE)).save(
        folder / "p.gif")
    earlier = write_output(folder / "p.png")
    jobs, _ = collect_inputs([folder])
    planner = OutputPlanner(ExportOptions(folder, if_exists="overwrite"), jobs)
    plans = {j.path.name: planner.plan(j) for j in jobs}
    assert plans == {"p.gif": (earlier, ""), "p.png": (earlier, "a colour version of 'p.gif' beside it: an earlier "
                                                                "run's output")}


def test_colorize_run_again_into_the_photos_own_folder_replaces_or_skips_its_outputs(tmp_path, capsys):
    weights = tmp_path / "model.pt"
    save_weights(random_model(), weights)
    for i in range(2):
        write_grey(tmp_path / "scans" / f"p{i}.jpg", 40, 50, i)
    args = ["colorize", str(tmp_path / "scans"), "--output", str(tmp_path / "scans"), "--weights", str(weights),
            "--size", "64"]
    for extra in ([], ["--overwrite"], ["--skip-existing"], ["--overwrite"]):
        assert engine_cli.main([*args, *extra]) == 0
    assert sorted(p.name for p in (tmp_path / "scans").iterdir()) == ["p0 (1).jpg", "p0.jpg", "p1 (1).jpg", "p1.jpg"]
    out = capsys.readouterr().out
    assert "2 skipped" in out  # --skip-existing: each photo's output was there (and each output left out)


def test_folders_given_together_with_the_output_folder_one_of_them_skip_the_outputs_of_both(tmp_path, capsys):
    weights = tmp_path / "model.pt"
    save_weights(random_model(), weights)
    for folder in ("a", "b"):
        write_grey(tmp_path / folder / "p.png", 40, 50)
    args = ["colorize", str(tmp_path / "a"), str(tmp_path / "b"), "--output", str(tmp_path / "a"), "--weights",
            str(weights), "--size", "64", "--overwrite"]
    for _ in range(2):
        assert engine_cli.main(args) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.png") if p.name != "model.pt")
    assert written == ["a/a/p.png", "a/b/p.png", "a/p.png", "b/p.png"]  # no a/a/a, a/a/b: nothing walked twice
    out = capsys.readouterr().out
    assert [line.split(" in ")[0] for line in out.splitlines() if " photos/s" in line] == ["2 photos"] * 2


def test_an_output_of_this_app_among_the_photos_is_skipped_unread_whatever_its_name(tmp_path):
    """After the output folder moved elsewhere, an earlier run's outputs are still not photos to colour."""
    from engine.batch.pipeline import BatchPipeline
    from engine.colorizer import Colorizer
    from engine.options import ColorizeSettings

    photo = write_grey(tmp_path / "box" / "scan.png", 40, 50)
    earlier = write_output(tmp_path / "box" / "old-output" / "renamed by hand.jpg")
    jobs, _ = collect_inputs([tmp_path / "box"])
    colorizer = Colorizer.create(ColorizeSettings(device="cpu", size=64, batch_size=2), model=random_model())
    summary = BatchPipeline(colorizer, ExportOptions(tmp_path / "elsewhere")).run(jobs)
    by_path = {r.source: r for r in summary.results}
    assert by_path[photo].status == "done"
    assert by_path[earlier].status == "skipped" and by_path[earlier].message.startswith(
        "a colour version this app wrote (it carries the app's mark)")
