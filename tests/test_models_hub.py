"""`--model ORG/NAME`: config.json from a real Hugging Face cache (built in a temporary folder,
read offline by huggingface_hub itself), and every failure as one line. No network is used:
the Hub's answers are huggingface_hub's own exceptions, raised by a stand-in."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.files import load_preset

pytest.importorskip("huggingface_hub")
from huggingface_hub import errors

# huggingface_hub's HTTP client: httpx before 2.0, its fork httpx2 since.
httpx = pytest.importorskip("httpx2") if importlib.util.find_spec("httpx2") else pytest.importorskip("httpx")

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def _cache(root: Path, repo: str, configs: dict[str, dict[str, Any]], refs: dict[str, str]) -> Path:
    """The layout huggingface_hub reads: models--org--name/snapshots/<commit>/config.json, refs/<branch>."""
    folder = root / ("models--" + repo.replace("/", "--"))
    for commit, config in configs.items():
        snapshot = folder / "snapshots" / commit
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    for ref, commit in refs.items():
        (folder / "refs" / ref).write_text(commit, encoding="utf-8")
    return root


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache holding test-org/tiny-llama (main → llama-3-8b's config; another commit → mistral-7b's),
    made the cache of this process and of its children, offline."""
    import huggingface_hub.constants

    root = _cache(
        tmp_path / "hub",
        "test-org/tiny-llama",
        {COMMIT: load_preset("llama-3-8b"), OTHER: load_preset("mistral-7b")},
        {"main": COMMIT, "v2": OTHER},
    )
    _cache(root, "test-org/tiny-mixtral", {OTHER: load_preset("mixtral-8x7b")}, {"main": OTHER})
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return root


def _params_json(*args: str) -> Any:
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_model_from_the_cache_counts_as_its_config(hub_cache: Path) -> None:
    config = hub_cache / "models--test-org--tiny-llama" / "snapshots" / COMMIT / "config.json"
    from_hub = _params_json("--model", "test-org/tiny-llama")
    assert from_hub["total_params"] == 8_030_261_248  # Meta's published count for Llama 3 8B
    from_file = _params_json("--config", str(config))
    assert {k: v for k, v in from_hub.items() if k not in ("name", "model")} == {
        k: v for k, v in from_file.items() if k not in ("name", "model")
    }


def test_revision_picks_the_snapshot(hub_cache: Path) -> None:
    assert _params_json("--model", "test-org/tiny-llama", "--revision", "v2")["total_params"] == 7_241_732_096  # Mistral 7B
    assert _params_json("--model", "test-org/tiny-llama", "--revision", OTHER)["total_params"] == 7_241_732_096


def test_models_side_by_side(hub_cache: Path) -> None:
    rows = _params_json("--model", "test-org/tiny-llama, test-org/tiny-mixtral,test-org/tiny-llama")["models"]
    assert [m["name"] for m in rows] == ["test-org/tiny-llama", "test-org/tiny-mixtral"]  # a name given twice is one model
    assert [m["total_params"] for m in rows] == [8_030_261_248, 46_702_792_704]  # Meta's and Mistral's published totals


def test_cache_lookup_agrees_with_huggingface_hub(hub_cache: Path) -> None:
    from huggingface_hub import try_to_load_from_cache

    from ffn_cli.configs.hub import cached_config

    for revision in (None, "main", "v2", OTHER, COMMIT, "absent", "0" * 40):
        expected = try_to_load_from_cache("test-org/tiny-llama", "config.json", revision=revision)
        found = cached_config("test-org/tiny-llama", revision)
        assert (str(found) if found else None) == (expected if isinstance(expected, str) else None), revision


def test_hf_home_locates_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ffn_cli.configs.hub import hub_cache_dir

    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert hub_cache_dir() == tmp_path / "hf" / "hub"
    _cache(tmp_path / "hf" / "hub", "test-org/home", {COMMIT: load_preset("gpt2")}, {"main": COMMIT})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _params_json("--model", "test-org/home")["total_params"] == 124_439_808  # GPT-2 small, as published


def test_offline_and_not_cached(hub_cache: Path) -> None:
    result = CliRunner().invoke(app, ["params", "--model", "test-org/absent"])
    assert result.exit_code == 1
    assert "not in the local cache and HF_HUB_OFFLINE is set" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", ["no-slash", "a/b/c", "org/na me", "../etc"])
def test_bad_model_id(name: str) -> None:
    result = CliRunner().invoke(app, ["params", "--model", name])
    assert result.exit_code == 2, result.output
    assert "ORG/NAME" in result.output


def test_trace_and_bench_read_the_model(hub_cache: Path) -> None:
    result = CliRunner().invoke(app, ["trace", "--model", "test-org/tiny-llama", "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"]["source"] == "model test-org/tiny-llama"
    assert data["spec"]["d_model"] == 4096 and data["spec"]["d_ff"] == 14336


def test_params_model_never_imports_torch(hub_cache: Path) -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ffn_cli.cli import app\n"
        "result = CliRunner().invoke(app, ['params', '--model', 'test-org/tiny-llama', '--seq-len', '512,4096'])\n"
        "assert result.exit_code == 0, result.output\n"
        "assert '8,030,261,248' in result.output, result.output\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'huggingface_hub' not in sys.modules, 'a cached config needs no client'\n"
    )
    env = os.environ | {"HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr


# --- the Hub's answers, from huggingface_hub's own exception types ------------------------------


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("HEAD", "https://huggingface.co/org/name/resolve/main/config.json"))


ANSWERS: dict[str, tuple[Any, str]] = {
    "gated": (lambda: errors.GatedRepoError("gated", response=_response(401)), "log in (hf auth login) or set HF_TOKEN"),
    "missing": (lambda: errors.RepositoryNotFoundError("404", response=_response(404)), "no such model on the Hugging Face Hub"),
    "revision": (lambda: errors.RevisionNotFoundError("404", response=_response(404)), "no revision"),
    "no config": (lambda: errors.RemoteEntryNotFoundError("404", response=_response(404)), "has no config.json"),
    "server": (lambda: errors.HfHubHTTPError("500 Server Error", response=_response(500)), "the Hub answered 500"),
    "network": (lambda: httpx.ConnectError("[Errno -2] Name or service not known"), "cannot reach the Hugging Face Hub"),
    "timeout": (lambda: httpx.ReadTimeout("timed out"), "cannot reach the Hugging Face Hub"),
    "socket": (lambda: OSError("Network is unreachable"), "cannot reach the Hugging Face Hub"),
}


@pytest.mark.parametrize("answer", list(ANSWERS))
def test_hub_errors_are_one_line_and_one_request(answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    make, message = ANSWERS[answer]
    calls: list[str] = []

    def download(*args: Any, local_files_only: bool = False, **kwargs: Any) -> str:
        calls.append("cache" if local_files_only else "download")
        raise errors.LocalEntryNotFoundError("not cached")

    def metadata(url: str, timeout: float = 10.0, **kwargs: Any) -> None:
        calls.append(f"HEAD {timeout:g}s")
        raise make()

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", metadata)
    result = CliRunner().invoke(app, ["params", "--model", "org/name", "--revision", "v1"])
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert calls == ["cache", f"HEAD {huggingface_hub.constants.HF_HUB_ETAG_TIMEOUT:g}s"]  # one request, no retries


def test_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    result = CliRunner().invoke(app, ["params", "--model", "org/name"])
    assert result.exit_code == 1
    assert "pip install 'ffn-cli[hub]'" in result.output


def _one_error_line(*args: str) -> str:
    result = CliRunner().invoke(app, ["params", *args])
    assert result.exit_code != 0, result.output
    (line,) = result.output.strip().splitlines()
    return line


def test_a_named_pipe_in_the_cache_is_refused_at_once(hub_cache: Path) -> None:
    """A FIFO where config.json should be would block a read forever; --config refuses one, so does --model."""
    config = hub_cache / "models--test-org--tiny-llama" / "snapshots" / COMMIT / "config.json"
    config.unlink()
    os.mkfifo(config)
    assert "not a regular file" in _one_error_line("--model", "test-org/tiny-llama")
    ref = hub_cache / "models--test-org--tiny-mixtral" / "refs" / "main"
    ref.unlink()
    os.mkfifo(ref)
    assert "refs/main is not a regular file" in _one_error_line("--model", "test-org/tiny-mixtral")


@pytest.mark.parametrize("revision", ["../../etc", "/etc/passwd", "a//b", "v1/", "main\\x", "x/../y", "re v"])
def test_a_revision_that_could_leave_the_cache_is_refused(hub_cache: Path, revision: str) -> None:
    assert _one_error_line("--model", "test-org/tiny-llama", "--revision", revision).startswith("error: --revision")


def test_a_branch_with_slashes_is_still_a_revision(hub_cache: Path) -> None:
    refs = hub_cache / "models--test-org--tiny-llama" / "refs" / "refs" / "pr"
    refs.mkdir(parents=True)
    (refs / "1").write_text(OTHER, encoding="utf-8")
    assert _params_json("--model", "test-org/tiny-llama", "--revision", "refs/pr/1")["total_params"] == 7_241_732_096


def test_a_ref_that_holds_a_path_is_not_followed(hub_cache: Path) -> None:
    (hub_cache / "models--test-org--tiny-llama" / "refs" / "main").write_text("../../../../etc/passwd", encoding="utf-8")
    line = _one_error_line("--model", "test-org/tiny-llama")
    assert "refs/main holds no commit hash" in line and "passwd" not in line.split("(")[0]


_SIDECAR = {"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}


def test_a_cached_sidecar_is_read_with_config_json(hub_cache: Path) -> None:
    # ModelOpt's hf_quant_config.json kept beside config.json in the snapshot: read without a request.
    folder = hub_cache / "models--test-org--tiny-llama" / "snapshots" / COMMIT
    (folder / "hf_quant_config.json").write_text(json.dumps(_SIDECAR), encoding="utf-8")
    data = _params_json("--model", "test-org/tiny-llama")
    assert data["checkpoint"]["origin"].startswith("hf_quant_config.json: modelopt")
    assert data["checkpoint"]["formats_by_role"] == {} and data["checkpoint"]["format"]["name"] == "nvfp4"


@pytest.mark.parametrize("answer", ["present", "absent", "network"])
def test_a_config_json_fetched_now_brings_its_sidecar(answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Downloaded for the first time: config.json, then hf_quant_config.json where the repository has
    # one (absent: nothing said); a Hub that fails on the second is said in one line, never read as bf16.
    import huggingface_hub

    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    calls: list[str] = []

    def download(repo: str, filename: str, *args: Any, local_files_only: bool = False, **kwargs: Any) -> str:
        calls.append(filename + (" (cache)" if local_files_only else ""))
        if local_files_only:
            raise errors.LocalEntryNotFoundError("not cached")
        if filename == "hf_quant_config.json":
            if answer == "absent":
                raise errors.RemoteEntryNotFoundError("404", response=_response(404))
            if answer == "network":
                raise httpx.ConnectError("[Errno -2] Name or service not known")
            (snapshot / filename).write_text(json.dumps(_SIDECAR), encoding="utf-8")
        else:
            (snapshot / filename).write_text(json.dumps(load_preset("llama-3-8b")), encoding="utf-8")
        return str(snapshot / filename)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda *a, **k: None)
    result = CliRunner().invoke(app, ["params", "--model", "org/name", "--json"])
    assert calls == ["config.json (cache)", "config.json", "hf_quant_config.json"]
    if answer == "network":
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert "error: --model org/name: hf_quant_config.json, beside its config.json, could not be checked" in result.output
        return
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout).get("checkpoint")  # none where the model says no quantization
    assert stored["origin"].startswith("hf_quant_config.json: modelopt") if answer == "present" else stored is None


@pytest.mark.parametrize("remembered", [False, True])
def test_a_cached_config_json_asks_for_its_sidecar_once(remembered: bool, hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # config.json cached, its sidecar not (fetched by an older ffn, or another tool): asked for,
    # online, and kept in the snapshot; where huggingface_hub's cache remembers it absent, not asked.
    import huggingface_hub

    folder = hub_cache / "models--test-org--tiny-llama" / "snapshots" / COMMIT
    if remembered:
        (hub_cache / "models--test-org--tiny-llama" / ".no_exist" / COMMIT).mkdir(parents=True)
        (hub_cache / "models--test-org--tiny-llama" / ".no_exist" / COMMIT / "hf_quant_config.json").touch()
    calls: list[str] = []

    def download(repo: str, filename: str, *args: Any, **kwargs: Any) -> str:
        calls.append(filename)
        (folder / filename).write_text(json.dumps(_SIDECAR), encoding="utf-8")
        return str(folder / filename)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    data = _params_json("--model", "test-org/tiny-llama")
    assert calls == ([] if remembered else ["hf_quant_config.json"])
    assert ("checkpoint" in data) is not remembered


def test_a_bad_cached_sidecar_is_named(hub_cache: Path) -> None:
    folder = hub_cache / "models--test-org--tiny-llama" / "snapshots" / COMMIT
    (folder / "hf_quant_config.json").write_text("{", encoding="utf-8")
    result = CliRunner().invoke(app, ["params", "--model", "test-org/tiny-llama"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith("error: --model test-org/tiny-llama: its hf_quant_config.json is not valid JSON")
