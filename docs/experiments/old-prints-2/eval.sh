#!/usr/bin/env bash
# Judge runs/old-prints-2 against the bundled old-prints through colorize, per the rule written before the run.
set -u
cd /work/main
OUT=runs/eval-op2
mkdir -p $OUT
CAND=runs/old-prints-2/colorizer.pt
declare -A SETS=([validation]="../shared/photos/train --split validation" [c-test]=/work/extra-c-test [set-a]=/work/external-photos [set-b]=/work/extra-photos-b [c-rest]=/work/extra-c-rest)
for kind in third degrade clean; do
  for set in validation c-test set-a set-b c-rest; do
    .venv/bin/python tools/old_prints_through_cli.py ${SETS[$set]} --scans $kind --models old-prints $CAND shipped --json $OUT/$set-$kind.json > $OUT/$set-$kind.txt 2>&1
    echo "$(date +%T) $set $kind done rc=$?"
  done
  .venv/bin/python tools/old_prints_through_cli.py --pool $OUT/{validation,c-test,set-a,set-b,c-rest}-$kind.json > $OUT/pooled-$kind.txt 2>&1
done
echo EVAL-DONE
