"""The layout of a model no reader knows kept on disk (ffn_cli/configs/layout_cache.py): a second
call builds nothing and answers as the build did, byte for byte; a changed file misses; a damaged,
foreign or tampered entry is a miss, never trusted and never a crash, and is rewritten."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

transformers = pytest.importorskip("transformers")

from ffn_cli.cli import app  # noqa: E402
from ffn_cli.configs import fallback, layout_cache  # noqa: E402
from ffn_cli.configs.built import BuiltLayout  # noqa: E402
from ffn_cli.configs.families import SUPPORTED_MODEL_TYPES  # noqa: E402
from ffn_cli.i18n import Message  # noqa: E402
from ffn_cli.models.count import count_model  # noqa: E402

KNOWN = SUPPORTED_MODEL_TYPES

# Small configs of each kind the layout holds: MLA with an indexer and dense-then-MoE layers, a
# Gated DeltaNet hybrid with gated attention, sliding windows, sinks with a router bias, a mixer
# counted tensor by tensor whose state is named as not sized.
_CONFIGS: dict[str, dict[str, Any]] = {
    "glm_moe_dsa": dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
                        num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24,
                        qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, index_head_dim=8, index_n_heads=2, vocab_size=128,
                        first_k_dense_replace=1, max_position_embeddings=4096),
    "qwen3_next": dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, shared_expert_intermediate_size=32,
                       num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=4,
                       num_experts_per_tok=2, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                       linear_value_head_dim=8, vocab_size=128),
    "gemma3_text": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
                        head_dim=16, sliding_window=32, vocab_size=128),
    "gpt_oss": dict(hidden_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                    head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=32, vocab_size=128),
    "falcon_mamba": dict(hidden_size=64, num_hidden_layers=2, state_size=4, vocab_size=128, intermediate_size=128),
}  # fmt: skip


def _config(model_type: str) -> dict[str, Any]:
    """The small config as a config.json reads back (its keys strings)."""
    config = {**transformers.AutoConfig.for_model(model_type, **_CONFIGS[model_type]).to_dict(), "model_type": model_type}
    return dict(json.loads(json.dumps(config)))


class CountingBuild:
    """layout_by_building, counted: the seam through which every layout is built."""

    def __init__(self) -> None:
        self.calls = 0

        self.build = fallback.layout_by_building

    def __call__(self, config: dict[str, Any], **kwargs: Any) -> BuiltLayout:
        self.calls += 1
        return self.build(config, **kwargs)


def _cached(config: dict[str, Any], build: CountingBuild, *, name: str = "m", source: str = "m.json") -> BuiltLayout:
    return layout_cache.layout_cached(config, name=name, source=source, known=KNOWN, build=build)


def _entry(config: dict[str, Any]) -> Path:
    key = layout_cache.cache_key(config)
    assert key is not None
    return layout_cache.cache_dir() / f"{key}.json"


@pytest.mark.parametrize("model_type", sorted(_CONFIGS))
def test_a_hit_builds_nothing_and_equals_the_build(model_type: str) -> None:
    config = _config(model_type)
    build = CountingBuild()
    first = _cached(config, build, name="first", source="first.json")
    assert build.calls == 1 and _entry(config).is_file()
    again = _cached(config, build, name="second", source="second.json")
    assert build.calls == 1  # read back: nothing built
    fresh = fallback.layout_by_building(config, name="second", source="second.json", known=KNOWN)
    # Everything a layout holds, this call's name and source included, is the build's.
    assert again == fresh and again.spec == fresh.spec and again.config == config
    assert (again.spec.name, again.spec.source, again.source) == ("second", "second.json", "second.json")
    # Its words keep their ids and values, so they are said in the reader's language.
    for read, kept in zip((*first.left_out, *(w for _k, w in first.kinds)), (*again.left_out, *(w for _k, w in again.kinds)), strict=True):
        assert isinstance(read, Message) and isinstance(kept, Message)
        assert (kept.msgid, kept.parts, kept.shown()) == (read.msgid, read.parts, read.shown())
    assert count_model(again.spec).total_params == count_model(fresh.spec).total_params
    if model_type == "glm_moe_dsa":  # its routers' e_score_correction_bias, a buffer: a field away from its default, read back
        assert again.spec.router_score_bias and fresh.spec.router_score_bias


def test_a_changed_file_misses() -> None:
    config = _config("gemma3_text")
    build = CountingBuild()
    _cached(config, build)
    changed = {**config, "sliding_window": 16}
    layout = _cached(changed, build)
    assert build.calls == 2 and 16 in layout.windows and 32 not in layout.windows
    # Key order and spacing are not the content: the same file spelt otherwise hits.
    _cached(dict(reversed(list(config.items()))), build)
    assert build.calls == 2


def test_a_config_with_rope_scaling_hits_on_the_second_call() -> None:
    # transformers adds keys to the rope_scaling dict it is handed; the key is the file as read,
    # taken before the build, and the build gets a copy.
    config = _config("glm_moe_dsa")
    config.pop("rope_parameters", None)
    config["rope_scaling"] = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    as_read = json.loads(json.dumps(config))
    probe = json.loads(json.dumps(config))
    fallback.layout_by_building(probe, name="m", source="m.json", known=KNOWN)
    assert "rope_theta" in probe["rope_scaling"]  # what a build does to the dict it is handed
    build = CountingBuild()
    _cached(config, build)
    assert config == as_read
    _cached(config, build)
    assert build.calls == 1


def _signed(payload: Any, key: str) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return json.dumps({"key": key, "sha256": hashlib.sha256(text.encode()).hexdigest(), "layout": payload})


def _damaged(damage: str, entry: Path, key: str) -> str:
    stored = json.loads(entry.read_text())
    payload = stored["layout"]
    if damage == "not json":
        return "{not json"
    if damage == "truncated":
        return entry.read_text()[: entry.stat().st_size // 2]
    if damage == "empty":
        return ""
    if damage == "another key":
        return json.dumps({**stored, "key": "0" * 64})
    if damage == "a changed number, old checksum":
        return json.dumps(stored).replace('"d_model": 64', '"d_model": 65', 1)
    if damage == "a foreign class, signed":
        return _signed({"class": "subprocess.Popen", "fields": {"args": ["false"]}}, key)
    if damage == "an invalid spec, signed":  # the constructor's own checks refuse it
        text = json.dumps(payload).replace('"vocab_size": 128', '"vocab_size": -1', 1)
        return _signed(json.loads(text), key)
    if damage == "an unknown field, signed":
        payload["fields"]["spec"]["fields"]["not_a_field"] = 1
        return _signed(payload, key)
    if damage == "a value of another type, signed":  # a window given as text: no constructor checks it
        windows = payload["fields"]["windows"]["tuple"]
        windows[0] = str(windows[0])
        return _signed(payload, key)
    if damage == "not a layout, signed":
        return _signed({"tuple": [1, 2]}, key)
    if damage == "too large":
        return " " * (9 << 20) + entry.read_text()
    raise AssertionError(damage)


_DAMAGES = ["not json", "truncated", "empty", "another key", "a changed number, old checksum", "a foreign class, signed",
            "an invalid spec, signed", "an unknown field, signed", "a value of another type, signed", "not a layout, signed",
            "too large"]  # fmt: skip


@pytest.mark.parametrize("damage", _DAMAGES)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(damage: str) -> None:
    config = _config("gemma3_text")
    build = CountingBuild()
    fresh = _cached(config, build)
    entry, key = _entry(config), layout_cache.cache_key(config)
    assert key is not None
    entry.write_text(_damaged(damage, entry, key))
    assert layout_cache.load(config, name="m", source="m.json") is None
    again = _cached(config, build)
    assert build.calls == 2 and again == fresh
    assert layout_cache.load(config, name="m", source="m.json") is not None  # rewritten whole
    assert not [p for p in entry.parent.iterdir() if p != entry]  # no temporary file left beside it


def test_a_directory_that_cannot_be_written_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/dev/null")
    config = _config("gemma3_text")
    build = CountingBuild()
    assert _cached(config, build) == _cached(config, build)
    assert build.calls == 2


def _write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_the_command_answers_the_same_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, _config("glm_moe_dsa"))
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "2", "--seq-len", "100"]
    built = [CliRunner().invoke(app, [*args, *extra], env={"COLUMNS": "80"}) for extra in ([], ["--json"])]
    assert all(r.exit_code == 0 for r in built), built[0].output

    build = CountingBuild()
    monkeypatch.setattr(fallback, "layout_by_building", build)
    cached = [CliRunner().invoke(app, [*args, *extra], env={"COLUMNS": "80"}) for extra in ([], ["--json"])]
    assert build.calls == 0 and [r.output for r in cached] == [r.output for r in built]
    # --no-cache builds again, and answers the same.
    again = CliRunner().invoke(app, [*args, "--no-cache"], env={"COLUMNS": "80"})
    assert build.calls == 1 and again.output == built[0].output


def test_a_hit_loads_neither_torch_nor_transformers(tmp_path: Path) -> None:
    path = _write(tmp_path, _config("qwen3_next"))
    argv = ["ffn", "params", "--config", path, "--gpu", "h200"]
    assert CliRunner().invoke(app, argv[1:]).exit_code == 0  # stores the entry
    code = (
        "import sys\n"
        f"sys.argv = {argv!r}\n"
        "from ffn_cli.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('loaded:' + ','.join(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Gated DeltaNet" in result.stdout or "GatedDeltaNet" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "loaded:"
