"""A run never takes its own outputs, or the files systems keep beside photos, for photos to colorize."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
from helpers import colour_photo, random_model, write_grey

from engine import cli as engine_cli
from engine.batch.inputs import collect_inputs, output_folder_inside
from engine.batch.planning import EXISTS, IN_OUTPUT_FOLDER, OutputPlanner
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
    assert f"note: the output folder {tmp_path / 'in' / 'out'} is inside {tmp_path / 'in'}" in err


def test_a_photo_queued_before_the_output_folder_moved_inside_its_folder_is_skipped_not_colorized_again(tmp_path):
    photo = write_grey(tmp_path / "in" / "a.png", 20, 30)
    earlier = write_colour(tmp_path / "in" / "colour" / "in" / "a.png")
    jobs, _ = collect_inputs([tmp_path / "in"], keep_folder_names=True)  # as the window queued it, before
    planner = OutputPlanner(ExportOptions(tmp_path / "in" / "colour"), jobs)
    plans = {j.path: planner.plan(j) for j in jobs}
    assert plans[earlier] == (earlier, IN_OUTPUT_FOLDER)
    assert plans[photo] == (tmp_path / "in" / "colour" / "in" / "a (1).png", "")  # the usual copy beside it


@pytest.mark.parametrize("pattern", ["{stem}", "{stem}_colour"])
def test_colour_versions_an_earlier_run_wrote_beside_the_photos_are_left_out_and_taken_as_their_outputs(
        tmp_path, pattern):
    folder = tmp_path / "scans"
    x = write_grey(folder / "x.png", 20, 30)
    own = "x (1)" if pattern == "{stem}" else "x_colour"
    copy = write_colour(folder / f"{own}.png")
    copy_of_copy = write_colour(folder / f"{own} (1).png" if pattern == "{stem}" else folder / "x_colour_colour.png")
    jobs, _ = collect_inputs([folder])
    for if_exists in ("overwrite", "skip", "new_name"):
        planner = OutputPlanner(ExportOptions(folder, name_pattern=pattern, if_exists=if_exists), jobs)
        plans = {j.path: planner.plan(j) for j in jobs}
        why = "a colour version of 'x.png' beside it: an earlier run's output"
        assert plans[copy] == (copy, why)
        assert plans[copy_of_copy][1].startswith("a colour version of")
        if if_exists == "overwrite":
            assert plans[x] == (copy, "")  # replaces its earlier colour version
        elif if_exists == "skip":
            assert plans[x] == (copy, EXISTS)  # resumes: its output is there
        else:
            assert plans[x][1] == "" and not plans[x][0].exists()  # a new copy, never over the earlier one
    assert x.read_bytes() and copy.exists()


def test_a_grey_photo_named_like_a_copy_is_still_a_photo_and_never_replaced(tmp_path):
    """'x (1).png' beside 'x.png' in a folder written into itself: grey, so a photo of its own, not an output."""
    folder = tmp_path / "scans"
    x = write_grey(folder / "x.png", 20, 30, 0)
    twin = write_grey(folder / "x (1).png", 20, 30, 1)
    jobs, _ = collect_inputs([folder])
    planner = OutputPlanner(ExportOptions(folder, if_exists="overwrite"), jobs)
    plans = {j.path: planner.plan(j) for j in jobs}
    assert plans[twin] == (folder / "x (1) (1).png", "")
    assert plans[x] == (folder / "x (2).png", "")  # neither input is written over


def test_genuine_colour_photos_of_one_name_in_two_formats_are_not_taken_for_each_others_outputs(tmp_path):
    folder = tmp_path / "colour"
    jpg = folder / "x.jpg"
    folder.mkdir()
    assert cv2.imwrite(str(jpg), colour_photo(40, 50, 1))
    png = write_colour(folder / "x.png", 2)
    jobs, _ = collect_inputs([folder])
    planner = OutputPlanner(ExportOptions(folder), jobs)  # the format kept: x.jpg -> x.jpg, x.png -> x.png
    assert all(planner.plan(j)[1] == "" for j in jobs) and png.exists()
