"""`ffn bench --plot` in Chinese: drawn in Chinese where a CJK font is installed, else in English
(DejaVu Sans has no CJK glyphs), and the terminal keeps its language either way."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ffn_cli.i18n import language, set_language

pytest.importorskip("matplotlib")

from ffn_cli.render.bench import write_plot
from ffn_cli.render.plot import CJK_FONTS, picture_language


def _has_cjk_font() -> bool:
    from matplotlib import font_manager

    return bool({f.name for f in font_manager.fontManager.ttflist} & set(CJK_FONTS))


def test_the_picture_speaks_what_its_fonts_can_draw() -> None:
    set_language("zh")
    with picture_language():
        assert language() == ("zh" if _has_cjk_font() else "en")
    assert language() == "zh"


def test_a_chinese_plot_draws_no_missing_glyph(tmp_path: Path) -> None:
    from tests.test_cli_bench import _fake_report

    set_language("zh")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        path = write_plot(_fake_report(), str(tmp_path / "bench.png"))
    assert path.stat().st_size > 0 and language() == "zh"
