"""Run a subprocess as if an optional package were not installed.

A `sitecustomize.py` on PYTHONPATH puts a meta-path finder first that refuses the package
and its submodules, the way an import of a missing package fails (public importlib API only).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SITECUSTOMIZE = '''\
import sys


class _Refuse:
    """Refuse {name!r} and its submodules, as if it were not installed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == {name!r} or fullname.startswith({name!r} + "."):
            raise ModuleNotFoundError(f"No module named {{fullname!r}}", name=fullname)
        return None


sys.meta_path.insert(0, _Refuse())
'''


def env_without(package: str, folder: Path) -> dict[str, str]:
    """An environment whose Python cannot import `package`; `folder` holds the sitecustomize."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(name=package))
    repo = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(folder), repo, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_without(package: str, folder: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m *args` in a subprocess that cannot import `package`."""
    return subprocess.run([sys.executable, *args], env=env_without(package, folder), cwd=cwd, capture_output=True, text=True, timeout=300)
