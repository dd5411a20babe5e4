"""The Hugging Face variables huggingface_hub reads when it is imported, checked before it is.

huggingface_hub parses HF_HUB_ETAG_TIMEOUT with int() and HF_ENDPOINT as a URL at import time,
and reads its token under HF_HOME: a value it cannot use fails inside the import (after printing
to stdout). Here each is checked first, and one that cannot work is named in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ffn_cli.errors import FFNError, first_line
from ffn_cli.i18n import _

__all__ = ["check_hub_environment"]

# Read with int() when huggingface_hub is imported.
_WHOLE_SECONDS = ("HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT")
# Where the cache and the token live: in each group, the first one set is the one huggingface_hub uses.
_FOLDERS = (("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"), ("HF_HOME", "XDG_CACHE_HOME"))


class HubEnvError(FFNError):
    """A Hugging Face variable that cannot work, worded whole."""

    def __init__(self, name: str, value: str, problem: str) -> None:
        self.option, self.value, self.allowed = name, value, ""
        ValueError.__init__(
            self,
            _("{name}={value} {problem}; fix or unset it (--model reads it through huggingface_hub)").format(
                name=name, value=repr(value), problem=problem
            ),
        )


def _not_a_folder(path: Path) -> Path | None:
    """The first existing part of `path` that is not a folder (/dev/null in /dev/null/hub), or None."""
    for part in [path, *path.parents]:
        if part.exists():
            return None if part.is_dir() else part
    return None


def check_hub_environment(environ: Mapping[str, str] | None = None) -> None:
    """Refuse a Hugging Face variable huggingface_hub would fail on, before importing it."""
    environ = os.environ if environ is None else environ
    for name in _WHOLE_SECONDS:
        text = environ.get(name, "").strip()
        if text and not (text.isascii() and text.isdigit() and len(text) < 10):
            raise HubEnvError(name, environ[name], _("is not a whole number of seconds"))
    endpoint = environ.get("HF_ENDPOINT")
    if endpoint is not None:
        try:
            parts = urlsplit(endpoint.strip())
            parts.port  # noqa: B018 - a port out of range raises only when read
        except ValueError as exc:
            raise HubEnvError("HF_ENDPOINT", endpoint, _("is not a URL ({error})").format(error=first_line(exc))) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HubEnvError("HF_ENDPOINT", endpoint, _("is not an http(s) URL such as https://huggingface.co"))
    for group in _FOLDERS:
        folder_variable = next((n for n in group if environ.get(n)), None)
        if folder_variable is not None:
            value = environ[folder_variable]
            blocked = _not_a_folder(Path(value).expanduser())
            if blocked is not None:
                raise HubEnvError(
                    folder_variable, value, _("puts the Hugging Face cache under {folder}, which is not a folder").format(folder=blocked)
                )
