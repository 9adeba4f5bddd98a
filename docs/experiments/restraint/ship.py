"""Ship a chosen spread: runs/restraint/MODEL.pt to resources/models/MODEL.pt, its card saying which photos chose it
(the scratch folder of links is named for what it holds). The tensors are copied as they are.
"""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, ".")
from engine.weights import read_weights  # noqa: E402

for name in sys.argv[1:]:
    blob = read_weights(f"runs/restraint/{name}.pt")
    card = json.loads(blob["meta"]["card"])
    card["readout"]["hint_spread_chosen_again_on"] = "../shared/photos/train, its tuning split (78 photos)"
    blob["meta"]["card"] = json.dumps(card)
    torch.save(blob, f"resources/models/{name}.pt")
    beside = Path(f"resources/models/{name}.json")  # the card's JSON, where the model has one beside it
    if beside.exists():
        beside.write_text(json.dumps(card, indent=2))
