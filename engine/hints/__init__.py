"""Colour hints: a few user points, each an sRGB colour, as the hint map a hinted model reads.

A hinted model (``ModelConfig.hint_channels == 3``) reads L plus a 3-channel hint map, as in
Zhang et al. 2017: the hint's ab (/ AB_RANGE) and a mask of 1 at the hinted pixels, zero elsewhere.
Only a hint colour's chroma is used: the photo's own lightness stays.

One module per concern: ``point`` (the ``Hint`` type), ``network_map`` (what the network reads), ``spread``
(how a hint reaches beyond its point), ``draws`` (training draws and a simulated user), ``hints_file`` (the
JSON file) and ``matching`` (the file's keys to the photos of a run). numpy only (no torch): the GUI can
build hints without the model's libraries.
"""

from .draws import TRAIN_PATCHES, sample_hints, simulate_hints
from .hints_file import (
                         HINTS_FILE_VERSION,
                         HintsFile,
                         HintsFileError,
                         hints_document,
                         load_hints_file,
                         parse_hints,
                         save_hints_file,
)
from .matching import HintMatch, match_hints, photo_key
from .network_map import fit_chroma, hint_map
from .point import HINT_CHANNELS, HINT_RADIUS, Hint, relative_pixel
from .spread import SPREAD_GRID, HintSpread, hint_share, spread_hints

__all__ = ["HINTS_FILE_VERSION", "HINT_CHANNELS", "HINT_RADIUS", "SPREAD_GRID", "TRAIN_PATCHES", "Hint", "HintMatch",
           "HintSpread", "HintsFile", "HintsFileError", "fit_chroma", "hint_map", "hints_document", "load_hints_file",
           "match_hints", "parse_hints", "photo_key", "relative_pixel", "sample_hints", "save_hints_file",
           "simulate_hints", "spread_hints", "hint_share"]
