"""The model card: the training's record (a dict saved inside the weights) written out as JSON and Markdown.

Why its own module: the training command and `readout` both write cards, and a card outlives the code
that made it, so old keys must still read well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..atomic import write_text
from .tuning import SPREAD_SLACK_DB

BEFORE_THE_OPTION = 5  # stages trained before --first-trained-block existed fine-tuned encoder blocks 5 and up


TEACHER_READOUT = "the teacher's, kept"  # ``readout["chosen_on"]`` of a student (``train --teacher``)


def _readout_note(readout: dict[str, Any]) -> str:
    if readout.get("chosen_on") == "tuning photos":
        return (f", chosen on the tuning photos for the best PSNR that keeps {readout['colour_target']} of the "
                "originals' colourfulness.")
    if readout.get("chosen_on") == "training photos":
        return ", chosen on training photos (the gain makes them as colourful as the originals)."
    if readout.get("chosen_on") == TEACHER_READOUT:
        fitted = ""
        if "teacher_chroma_gain" in readout:  # students before 2026-12-06 kept the teacher's gain too
            fitted = (f"; its chroma gain {readout.get('chroma_gain')} (the teacher's "
                      f"{readout['teacher_chroma_gain']}) gives it the teacher's colourfulness on the "
                      f"{readout.get('fitted_on', 'tuning photos')}")
        return (f", the teacher's (`{readout.get('teacher')}`), kept: the model learned to give its "
                f"distribution{fitted}.")
    if readout.get("chosen_on") == "photos from other sources":
        return (f", chosen again (`readout`) on {readout.get('photos')} photos from sources the training never saw "
                f"(`{readout.get('folder')}`): the most colourful read-out at least {readout.get('min_gain_db', 0)} "
                "dB better than grey there.")
    return "."


def _stage_line(card: dict[str, Any]) -> str:
    st = card.get("settings", {})
    return (f"{card.get('steps')} steps of batch {st.get('batch')} at {st.get('size')} px crops in "
            f"{card.get('minutes')} min (lr {st.get('lr')}, rebalance {st.get('rebalance')}, "
            f"reg weight {st.get('reg_weight')}, reg beta {st.get('reg_beta', 0.05)}, encoder frozen for "
            f"{st.get('freeze_steps')} steps, then blocks >= {st.get('first_trained_block', BEFORE_THE_OPTION)} "
            f"fine-tuned at {st.get('encoder_lr_scale', 1.0)}x, the decoder at {st.get('decoder_lr_scale', 1.0)}x, "
            f"seed {st.get('seed')})")


def _hint_lines(card: dict[str, Any]) -> list[str]:
    m, hints, readout = card["model"], card.get("hints") or {}, card.get("readout") or {}
    if not m.get("hint_channels"):
        return ["- Takes no colour hints."]
    path = "the stem and straight into each decoder stage" if m.get("hint_decoder") else "the stem"
    lines = [f"- Reads colour hints through {path}; training crops got none {hints.get('p_none', 0.5):.0%} of the "
             f"time, otherwise a geometric number of points (mean {1 / hints.get('geometric_p', 0.125):.0f})."]
    if m.get("hint_spread") and readout.get("chosen_on") == TEACHER_READOUT \
            and not readout.get("hint_spread_chosen_again_on"):
        lines.append(f"- Hint spread: reach {m['hint_spread']} of the shorter side, the teacher's, kept.")
    elif m.get("hint_spread"):
        spread = readout.get("hint_spread") or {}
        again = readout.get("hint_spread_chosen_again_on")
        where = (f"the photos of {again}" if again else "the same photos"
                 if readout.get("chosen_on") == "photos from other sources" else "the tuning photos")
        gain = f", chroma gain {m['hint_gain']} on a hinted photo" if m.get("hint_gain", 1.0) != 1.0 else ""
        terms = f", colour {m['hint_spread_colour']}" if m.get("hint_spread_colour") else ""
        terms += ", fading with its weight" if m.get("hint_spread_fade") else ""
        restraint = m.get("hint_spread_restraint")
        terms += (f", restraint {restraint} (a hint reaches less far the farther its colour is from the network's "
                   f"there: 1/√2 as far at {restraint} ab units)" if restraint else "")
        local = "one_hint_harm" in spread and spread.get("vivid", 1.0)  # no row kept the colour: the most colourful
        contained = bool(spread.get("off_colour")) and "one_hint_off_leak" in spread  # the "contained" rule
        how = ""
        if local:
            harm = f"{spread['one_hint_harm']:.2f}"
            hint, figures = (("where a lone hint, of the true colour or a wrong one,",
                              f"harm {harm} and leak {spread['one_hint_off_leak']:.2f}") if contained
                             else ("whose lone hint", harm))
            how = (f"as the one {hint} least changes the parts of another colour ({figures} ab units on "
                   f"average) within {SPREAD_SLACK_DB} dB of the best PSNR ")
        lines.append(f"- Hint spread: reach {m['hint_spread']} of the shorter side, lightness "
                     f"{m.get('hint_spread_lightness')}, floor {m.get('hint_spread_floor')}{terms}{gain}, "
                     f"chosen on {where} {how}"
                     f"with {spread.get('hints', 10)} simulated hints each "
                     f"({spread.get('gain_over_no_spread_db', 0):+.2f} dB there over no spread).")
    return lines


def _sampling_lines(sampling: dict[str, Any]) -> list[str]:
    if not sampling.get("balance_groups") and "extra_folder" not in sampling:
        return []
    how = (f"by MANIFEST group (share ~ sqrt of size, capped {sampling.get('cap')}): {sampling.get('group_shares')}"
           if sampling.get("balance_groups") else "uniformly")
    line = f"- Training photos drawn {how}"
    if "extra_folder" in sampling:
        line += (f"; plus {sampling['extra_photos']} photos from `{sampling['extra_folder']}` at "
                 f"{sampling['extra_share']:.0%} of the samples")
    return [line + "."]


def write_model_card(card: dict[str, Any], weights: Path) -> None:
    write_text(weights.with_suffix(".json"), json.dumps(card, indent=2))
    v = card.get("validation_256px_centre_crops", {})
    readout = card.get("readout") or {}
    if "teacher_chroma_gain" in readout:  # a student since 2026-12-06: its last weights, its gain fitted there
        tuned = "chroma gain was fitted"
    elif readout.get("chosen_on") in ("photos from other sources", TEACHER_READOUT):
        tuned = "snapshot was chosen"
    else:
        tuned = "read-out is chosen"
    lines = [
        f"# {card['name']}", "",
        f"- Trained on {card['data']['train_photos']} colour photos from `{card['data']['folder']}`; "
        f"held out by file name: {card['data'].get('tuning_photos', 0)} tuning photos (the {tuned} "
        f"on them) and {card['data']['validation_photos']} validation photos (only measured).",
        f"- {card['steps']} steps of batch {card['settings']['batch']} at {card['settings']['size']} px crops, "
        f"{card['minutes']} minutes, torch {card['torch']} on {card['threads']} threads.",
        f"- Encoder: EfficientNet-{card['model'].get('encoder', 'lite0').capitalize()} from ImageNet; "
        f"{card['bins']} ab bins; read-out temperature {card['model']['temperature']}, "
        f"doubt pull {card['model'].get('doubt_pull', 0.0)}, chroma gain {card['model'].get('chroma_gain', 1.0)}"
        + _readout_note(card.get("readout", {})),
        f"- Shipped weights: {card.get('weights', 'last step')}.",
    ]
    lines += _sampling_lines(card["data"].get("sampling") or {})
    lines += _hint_lines(card)
    if v:
        lines.append(f"- Validation (256 px centre crops): PSNR {v['psnr']:.2f} dB vs grey {v['psnr_grey']:.2f} dB "
                     f"(+{v['gain_db']:.2f} dB), colourfulness {v['colourfulness_ratio']:.2f} of the originals'.")
    stages = []
    c: dict[str, Any] | None = card
    while c:
        stages.append(c)
        c = c.get("started_from")
    lines += ["", "Training stages, first to last (each started from the one before with `--init`):", ""]
    for i, c in enumerate(reversed(stages), 1):
        lines.append(f"{i}. {_stage_line(c)}")
    write_text(weights.with_suffix(".md"), "\n".join(lines) + "\n")
