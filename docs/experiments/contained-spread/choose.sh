# The choice of docs/experiments, "Old prints' spread held against an off-colour hint". /work/tuning-split holds
# links to the 78 photos of ../shared/photos/train whose split_of(name, tune_fraction=0.1) is "tuning".
set -e
O=${O:-runs/contained-spread}
mkdir -p $O
.venv/bin/python main.py readout resources/models/old-prints.pt /work/tuning-split --hints-only \
    --spread-rule contained --out $O/old-prints.pt > $O/old-prints-choose.txt 2>&1
