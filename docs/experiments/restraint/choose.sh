# The choice of docs/experiments, "A hint far from the network's own colour reaches less far". /work/tuning-split
# holds links to the 78 photos of ../shared/photos/train whose split_of(name, tune_fraction=0.1) is "tuning".
set -e
O=${O:-runs/restraint}
mkdir -p $O
for m in old-prints colorizer; do
    .venv/bin/python main.py readout resources/models/$m.pt /work/tuning-split --hints-only \
        --spread-rule contained --out $O/$m.pt > $O/$m-choose.txt 2>&1
done
