#!/usr/bin/env bash
# Auto folder by folder against one model per batch, on mixed queues (a third as the third model's scans in old/,
# the rest as grey copies in modern/), per the rule written before the run (docs/experiments/README.md).
set -u
cd "$(dirname "$0")/../../.."
OUT=docs/experiments/auto-by-folder
declare -A SETS=([c-test]=/work/extra-c-test [set-a]=/work/external-photos [set-b]=/work/extra-photos-b [c-rest]=/work/extra-c-rest)
for set in set-a set-b c-test c-rest; do
  .venv/bin/python tools/old_prints_through_cli.py ${SETS[$set]} --mixed --models one-model auto --json $OUT/$set-mixed.json > $OUT/$set-mixed.txt 2>&1
  echo "$(date +%T) $set done rc=$?"
done
.venv/bin/python tools/old_prints_through_cli.py --pool $OUT/{set-a,set-b,c-test,c-rest}-mixed.json > $OUT/pooled-four-sets.txt 2>&1
echo EVAL-DONE
