# The judgment of docs/experiments, "A hint spread that stays near its hint": each model's chosen spread (NEW)
# against its shipped one (OLD), once, on the validation photos (clean and as scans) and set A (clean).
# O: the folder holding the chosen NEW weights and taking the figures; OLD_HINTS=no skips the old weights' 10 hints.
set -e
O=${O:-runs/local-spread}
for m in "$@"; do
  new=$O/$m.pt old=resources/models/$m.pt
  .venv/bin/python tools/hint_locality.py ../shared/photos/train --split validation --scans clean \
      --weights $new $old --json $O/$m-val-clean.json > $O/$m-val-clean.txt
  .venv/bin/python tools/hint_locality.py ../shared/photos/train --split validation --scans degrade \
      --weights $new $old --json $O/$m-val-scans.json > $O/$m-val-scans.txt
  .venv/bin/python tools/hint_locality.py /work/external-photos --split all --scans clean \
      --weights $new $old --json $O/$m-set-a.json > $O/$m-set-a.txt
  .venv/bin/python tools/hint_locality.py --pool $O/$m-val-clean.json $O/$m-val-scans.json $O/$m-set-a.json \
      > $O/$m-pooled.txt
  for w in new $([ "${OLD_HINTS:-yes}" = no ] || echo old); do
    eval wf=\$$w
    .venv/bin/python main.py evaluate ../shared/photos/train --split validation --hints 10 --weights $wf \
        --json $O/$m-val-hints10-$w.json > $O/$m-val-hints10-$w.txt
    .venv/bin/python main.py evaluate /work/external-photos --split all --hints 10 --weights $wf \
        --json $O/$m-set-a-hints10-$w.json > $O/$m-set-a-hints10-$w.txt
  done
done
