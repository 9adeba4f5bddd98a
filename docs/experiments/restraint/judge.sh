# The judgment of docs/experiments, "A hint far from the network's own colour reaches less far", for one model
# (old-prints or colorizer) whose chosen spread (runs/restraint/$1.pt, choose.sh) has a restraint.
set -e
m=$1
O=${O:-runs/restraint}
NEW=$O/$m.pt
OLD=resources/models/$m.pt
for scans in clean degrade; do
    .venv/bin/python tools/hint_locality.py ../shared/photos/train --split validation --scans $scans \
        --weights $NEW $OLD --json $O/$m-$scans.json > $O/$m-$scans.txt 2>&1
done
.venv/bin/python tools/hint_locality.py --pool $O/$m-clean.json $O/$m-degrade.json > $O/$m-pooled.txt 2>&1
for w in new old; do  # the hint curve is the primary weights' only: one run each
    W=$NEW; [ $w = old ] && W=$OLD
    .venv/bin/python main.py evaluate ../shared/photos/train --split validation --hints 10 --weights $W \
        --json $O/$m-hints10-$w.json > $O/$m-hints10-$w.txt 2>&1
done
