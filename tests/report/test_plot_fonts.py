"""Plots of ids in any script: fonts tried in turn, no warning per glyph."""
import warnings

import numpy as np

from pipeline.report import plots


def test_a_non_latin_id_is_plotted_without_glyph_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warned once per missing glyph
        png = plots.series_png(np.arange(5.0), np.arange(5.0), None, "店舗-東京 مخزن ☃")
    assert png.startswith(b"\x89PNG")


def test_only_installed_fonts_are_named():
    from matplotlib import font_manager
    names = {font.name for font in font_manager.fontManager.ttflist}
    assert set(plots.installed_fonts()) <= names | {"DejaVu Sans"}
    assert plots.installed_fonts()[0] == "DejaVu Sans"
