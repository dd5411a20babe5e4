"""The build's one step beyond pyproject.toml: compile each shipped gettext catalog (.po) into the
.mo that Python's gettext loads, so an installed ffn speaks Chinese without GNU gettext. A source
checkout needs no build: ffn_cli/i18n.py compiles the .po in memory when no .mo is there."""

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent


def _catalog_module():
    # By path: importing the ffn_cli package here would need its dependencies at build time.
    spec = importlib.util.spec_from_file_location("ffn_catalog", ROOT / "ffn_cli" / "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class BuildWithCatalogs(build_py):
    def run(self):
        super().run()
        catalog = _catalog_module()
        for po in sorted((ROOT / "ffn_cli" / "locale").glob("*/LC_MESSAGES/*.po")):
            target = Path(self.build_lib) / po.relative_to(ROOT).with_suffix(".mo")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(catalog.mo_bytes(catalog.read_po(po.read_text(encoding="utf-8"), str(po))))


setup(cmdclass={"build_py": BuildWithCatalogs})
