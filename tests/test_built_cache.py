"""The fallback's counts cached on disk: the same numbers as a build, read back without torch
or transformers, keyed by the config's content, skipped on any trouble with the directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from ffn_cli.cli import app
from ffn_cli.configs import built_cache, meta_build
from ffn_cli.configs.cache_files import sources_digest
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES
from tests.tiny_families import tiny_config

KNOWN = SUPPORTED_MODEL_TYPES


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def _params(*args: str) -> Any:
    result = CliRunner().invoke(app, ["params", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.output


@pytest.mark.parametrize("model_type", ["olmoe", "jamba", "t5"])
def test_a_hit_equals_a_fresh_build(model_type: str, cache_home: Path) -> None:
    config = tiny_config(model_type)
    built = meta_build.count(config, name="first", source="test")
    assert built_cache.load(config, name="x", source="y") is None
    first = built_cache.count_cached(config, name="first", source="test", known=KNOWN)
    assert first == built and not first.cached_from
    again = built_cache.count_cached(config, name="second", source="other", known=KNOWN)
    assert again.cached_from.startswith(str(cache_home / "ffn" / "built"))
    # Everything but the names of this call and where it came from is the build's.
    assert (again.parts, again.routed, again.notes, again.total_params, again.active_params) == (
        built.parts,
        built.routed,
        built.notes,
        built.total_params,
        built.active_params,
    )
    assert (again.name, again.source) == ("second", "other")


def test_the_key_is_the_content_not_its_spelling() -> None:
    config = tiny_config("olmoe")
    reordered = dict(reversed(list(config.items())))
    assert built_cache.cache_key(config) == built_cache.cache_key(reordered)
    assert built_cache.cache_key(config) != built_cache.cache_key({**config, "num_hidden_layers": 3})


def test_the_key_is_the_code_that_counts_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A count stored before the attribution rule changed (DeepSeek-V4's hyper-connections moved from
    # attention and FFN to other) is a miss, never a stale split: the rule's source is in the key.
    assert "ffn_cli.configs.attribution" in built_cache._COUNTERS
    # and the layout reader's: a count kept because the layout was refused misses once the reader changes
    assert "ffn_cli.configs.layer_read" in built_cache._COUNTERS
    module = tmp_path / "counting_rule.py"
    module.write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(built_cache, "_COUNTERS", ("counting_rule",))
    built_cache._counters.cache_clear()
    config = tiny_config("olmoe")
    before = built_cache.cache_key(config)
    module.write_text("RULE = 2\n")
    built_cache._counters.cache_clear()
    assert built_cache.cache_key(config) != before
    built_cache._counters.cache_clear()


def test_a_package_in_the_key_counts_by_every_module_in_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The layout reader is a package (ffn_cli.configs.layer_read): a change in any module of it is a
    # miss, and finding its modules runs none of its code (its __init__ imports torch: a hit must not).
    package = tmp_path / "reading_rules"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('the package is run')\n")
    part = package / "part.py"
    part.write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = sources_digest(["reading_rules"])
    part.write_text("RULE = 2\n")
    assert sources_digest(["reading_rules"]) != before
    assert "reading_rules" not in sys.modules


def test_the_cli_says_the_counts_are_transformers_build_read_back(cache_home: Path, tmp_path: Path) -> None:
    # XLM's layout is not read (its layers are lists side by side): ffn params counts it by building it.
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config("xlm")))
    built = _params("--config", str(path), "--json")
    assert built["cached_from"] is None and built["counted_by"] == "transformers"
    cached = _params("--config", str(path), "--json")
    assert cached["cached_from"] and cached["total_params"] == built["total_params"]
    assert cached["parts"] == built["parts"] and cached["active_params"] == built["active_params"]
    shown = " ".join(_params("--config", str(path)).split())
    assert "read back from ffn's cache" in shown and "Counted by building XLMModel" in shown
    fresh = _params("--config", str(path), "--no-cache", "--json")
    assert fresh["cached_from"] is None and fresh["total_params"] == built["total_params"]


def test_why_the_layout_is_not_read_is_said_in_the_readers_language_on_a_hit(cache_home: Path, tmp_path: Path) -> None:
    # The counts come back from the cache; why XLM's layout is not read is said in the language
    # asked, whichever language stored the entry.
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config("xlm")))
    english = " ".join(_params("--config", str(path)).split())
    assert "names no decoder layer class" in english
    asked = [("zh", "没有为它给出解码器层类", "names no"), ("zh", "没有为它给出解码器层类", "names no"), ("en", "names no", "解码器层类")]
    for lang, said, unsaid in asked:
        result = CliRunner().invoke(app, ["--lang", lang, "params", "--config", str(path)], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert said in result.output and unsaid not in result.output
        assert "ffn 的缓存" in result.output or "ffn's cache" in " ".join(result.output.split())


def test_a_hit_loads_neither_torch_nor_transformers(cache_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config("xlm")))
    _params("--config", str(path))  # stores the entry
    code = (
        "import sys\n"
        f"sys.argv = ['ffn', 'params', '--config', {str(path)!r}]\n"
        "from ffn_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('loaded:' + ','.join(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "read back from ffn's cache" in " ".join(result.stdout.split())
    assert result.stdout.strip().splitlines()[-1] == "loaded:"


@pytest.mark.parametrize("where", ["/dev/null", "file", "readonly"])
def test_a_bad_cache_directory_is_skipped(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if where == "file":
        target = tmp_path / "a-file"
        target.write_text("not a directory")
    elif where == "readonly":
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o500)
    else:
        target = Path(where)
    monkeypatch.setenv("XDG_CACHE_HOME", str(target))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config("olmoe")))
    expected = meta_build.count(tiny_config("olmoe"), name="x", source="y").total_params
    for _ in range(2):
        assert _params("--config", str(path), "--json")["total_params"] == expected


@pytest.mark.parametrize("damage", ["not json", '{"key": "other", "model": {}}', '{"key": "KEY", "model": {"parts": 3}}', ""])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(damage: str, cache_home: Path) -> None:
    config = tiny_config("olmoe")
    key = built_cache.cache_key(config)
    assert key is not None
    entry = built_cache.cache_dir() / f"{key}.json"
    entry.parent.mkdir(parents=True)
    entry.write_text(damage.replace("KEY", key))
    assert built_cache.load(config, name="x", source="y") is None
    built = built_cache.count_cached(config, name="x", source="y", known=KNOWN)
    assert built_cache.load(config, name="x", source="y") is not None
    assert built.total_params == meta_build.count(config, name="x", source="y").total_params


def test_no_cache_is_refused_for_one_ffn() -> None:
    result = CliRunner().invoke(app, ["params", "--variant", "swiglu", "--no-cache"])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "--config" in result.output


def test_a_config_with_rope_scaling_hits_on_the_second_call(cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # transformers adds rope_theta to the rope_scaling dict it is handed; the entry is keyed by
    # the file as read, so the second call finds it and never builds. OLMoE with no expert a token
    # has no layout ffn reads: counted by building it.
    config = {**tiny_config("olmoe"), "num_experts_per_tok": 0}
    config.pop("rope_parameters", None)
    config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    as_written = json.loads(path.read_text())
    built = _params("--config", str(path), "--json")
    assert built["cached_from"] is None

    def no_second_build(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("built again: the cache missed")

    monkeypatch.setattr(built_cache, "count_by_building", no_second_build)
    cached = _params("--config", str(path), "--json")
    assert cached["cached_from"] and cached["total_params"] == built["total_params"]
    # The caller's dict is not changed by a build either.
    given = json.loads(json.dumps(as_written))
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    built_cache.count_cached(given, name="x", source="y", known=KNOWN)
    assert given == as_written


def test_why_active_is_unknown_is_said_in_the_readers_language_built_or_read_back(cache_home: Path, tmp_path: Path) -> None:
    # The reason was English under --lang zh; a hit now keeps its id and values, not the English.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**tiny_config("olmoe"), "num_experts_per_tok": 0}))
    for run in ("built", "read back"):  # a build, then the cache's hit
        result = CliRunner().invoke(app, ["--lang", "zh", "params", "--config", str(path)])
        shown = result.stdout
        assert result.exit_code == 0, result.output
        assert "num_experts_per_tok 是 0，不是正整数" in shown and "not a positive integer" not in shown, run
    said = _params("--config", str(path), "--json")["routed_experts"][0]["unknown_because"]
    assert said == "num_experts_per_tok is 0, not a positive integer or a per-layer list of them"  # --json stays English
