# The choice of docs/experiments, "A hint spread that stays near its hint". /work/tuning-split holds links to the
# photos of ../shared/photos/train whose split_of(name, tune_fraction=0.1) is "tuning" (78), made beforehand.
set -e
for m in colorizer old-prints; do
  .venv/bin/python main.py readout resources/models/$m.pt /work/tuning-split --hints-only --spread-rule local \
     --out runs/local-spread/$m.pt
done
