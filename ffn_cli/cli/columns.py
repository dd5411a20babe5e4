"""An unusable COLUMNS dropped before anything makes a rich console: imported first by the
package, since some Typer releases (0.16) build one when typer itself is imported."""

from __future__ import annotations

import os

__all__ = ["drop_unusable_columns"]


def drop_unusable_columns() -> None:
    """COLUMNS=0 (or text rich would misread, such as '²') would make every table zero columns
    wide, printing nothing at all: without it, rich measures the terminal or assumes 80."""
    text = os.environ.get("COLUMNS")
    if text is not None and not (text.isascii() and text.isdigit() and len(text) < 7 and int(text) > 0):
        del os.environ["COLUMNS"]


drop_unusable_columns()
