#!/bin/bash
# Two tunes from Old prints on the 78 tuning photos, inheriting its old-print crops and not; each measured on the
# 66 validation photos, clean and degraded, against the other (docs/experiments, "A tune keeps training on
# old-print scans"). Usage: run.sh TUNING_FOLDER TRAIN_FOLDER OUT
set -euo pipefail
tuning=$1 train=$2 out=$3
mkdir -p "$out/models"
export COLORIZER_MODELS_DIR="$out/models"
py=${PY:-.venv/bin/python}
for arm in inherit clean; do
  share=""; [ "$arm" = clean ] && share=0
  $py - "$tuning" "$arm" "$share" <<'PY'
import sys
from pathlib import Path
from engine.training.tune import TuneSettings, run_tune
tuning, arm, share = sys.argv[1:4]
card = run_tune(TuneSettings([Path(tuning)], name=f"tune-{arm}", minutes=4.0, seed=0,
                             base=Path("resources/models/old-prints.pt"),
                             degrade_share=float(share) if share else None))
t = card["tune"]
print(arm, "steps", t["steps"], "degrade_share", t["degrade_share"], "held-out", t["heldout"]["gain_db"],
      t["heldout"]["interval"])
PY
done
$py main.py evaluate "$train" --split validation --degrade --weights "$out/models/tune-inherit.pt" \
    --against "$out/models/tune-clean.pt" --json "$out/eval.json" > "$out/eval.txt" 2>&1
