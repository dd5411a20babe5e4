"""A model's config.json from the Hugging Face Hub: the local cache first, then one request.

Only config.json is ever read, never weights. A cached file is found by the cache's own layout
(models--org--name/refs/<branch>, snapshots/<commit>/config.json) without importing anything;
otherwise huggingface_hub (the optional `hub` extra) does the work. HF_HUB_OFFLINE, HF_HOME /
HF_HUB_CACHE and HF_TOKEN mean what they mean to every other Hugging Face tool. Each failure
becomes one line naming the model: not found, gated, offline and not cached, network down. The
download is a single try with huggingface_hub's short metadata timeout (HF_HUB_ETAG_TIMEOUT,
10 s unless set), never a loop of retries.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ffn_cli.configs.files import MAX_CONFIG_BYTES, READ_TIMEOUT_S, parse_config, read_capped
from ffn_cli.configs.quant_sidecar import MAX_SIDECAR_BYTES, SIDECAR, has_quantization, merged, present
from ffn_cli.errors import FFNError, FFNRuntimeError, first_line
from ffn_cli.i18n import _

__all__ = ["REPO_ID", "cached_config", "hub_cache_dir", "hub_config"]

# ORG/NAME as the Hub spells repository ids: letters, digits, '-', '_', '.'.
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
# A branch, tag or commit as git names them (refs/pr/1 included): no "..", no leading or
# doubled "/", nothing that could walk out of the cache's refs/ folder.
_REVISION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")
_TRUE = ("1", "on", "yes", "true")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def hub_config(repo_id: str, revision: str | None = None) -> tuple[dict[str, Any], str]:
    """(the parsed config.json, the local file it was read from) for `repo_id` at `revision`."""
    name = repo_id.strip()
    if not REPO_ID.match(name) or ".." in name:
        raise FFNError("model", repo_id, _("a Hugging Face model id, ORG/NAME (e.g. meta-llama/Meta-Llama-3-8B)"))
    if revision is not None and (not _REVISION.match(revision.strip()) or ".." in revision or revision.strip().endswith(".lock")):
        raise FFNError("revision", revision, _("a branch, tag or commit hash (letters, digits, '.', '_', '-', and '/' between parts)"))
    rev = revision.strip() if revision else None
    path = _download(name, rev)
    config = parse_config(_read_cached(Path(path), name, "config.json"), f"{name} config.json")
    if has_quantization(config):
        return config, path
    beside = Path(path).parent / SIDECAR
    if not present(beside) and not _known_absent(beside) and not _offline():  # asked once: an absent one is remembered
        _fetch_sidecar(name, rev)
    if present(beside):  # kept in the same snapshot: later calls read it without a request
        try:
            sidecar = parse_config(_read_cached(beside, name, SIDECAR, MAX_SIDECAR_BYTES), f"{name} {SIDECAR}")
            config = merged(config, sidecar, f"{name} {SIDECAR}")
        except FFNError as exc:  # said of the sidecar, not of config.json
            raise FFNError("model", name, _("its {sidecar} {allowed}").format(sidecar=SIDECAR, allowed=exc.allowed)) from None
    return config, path


def _known_absent(beside: Path) -> bool:
    """Whether huggingface_hub's cache remembers the snapshot has no such file (its .no_exist folder)."""
    snapshot = beside.parent
    return (snapshot.parent.parent / ".no_exist" / snapshot.name / beside.name).exists()


def _fetch_sidecar(name: str, revision: str | None) -> None:
    """ModelOpt's hf_quant_config.json of a model whose config.json was just downloaded, where the
    repository has one (most have none: nothing is said). A Hub that fails now is said, never
    read as no quantization."""
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:  # a config.json read from the cache without the client: nothing to ask with
        return
    try:
        huggingface_hub.hf_hub_download(name, SIDECAR, revision=revision)
    except errors.EntryNotFoundError:
        return
    except Exception as exc:  # httpx's request errors and the Hub's HTTP errors, as config.json's above
        if not (_is_network_error(exc) or isinstance(exc, errors.HfHubHTTPError)):
            raise
        why = _("--model {name}: {sidecar}, beside its config.json, could not be checked ({first_line}); try again")
        raise FFNRuntimeError(why.format(name=name, sidecar=SIDECAR, first_line=first_line(exc))) from None


def _read_cached(file: Path, name: str, what: str, cap: int = MAX_CONFIG_BYTES) -> str:
    """A small text file of the cache, read as --config reads one: a regular file (a named
    pipe would block forever), within READ_TIMEOUT_S, at most MAX_CONFIG_BYTES."""
    try:
        if not file.is_file():
            raise FFNRuntimeError(
                _("--model {name}: the cached {what} is not a regular file ({file})").format(name=name, what=what, file=file)
            )
        data = read_capped(file, cap, READ_TIMEOUT_S)
    except OSError as exc:
        raise FFNRuntimeError(
            _("--model {name}: cannot read the cached {what} ({reason})").format(name=name, what=what, reason=exc.strerror or exc)
        ) from None
    except TimeoutError:
        raise FFNRuntimeError(
            _("--model {name}: the cached {what} gave no end of file within {read_timeout_s:g} s").format(
                name=name, what=what, read_timeout_s=READ_TIMEOUT_S
            )
        ) from None
    if data is None:
        raise FFNRuntimeError(
            _("--model {name}: the cached {what} is over {max_config_bytes:,} bytes").format(name=name, what=what, max_config_bytes=cap)
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FFNRuntimeError(_("--model {name}: the cached {what} is not UTF-8 text").format(name=name, what=what)) from None


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps its cache: HF_HUB_CACHE, else HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub (~/.cache/huggingface/hub), as huggingface_hub.constants reads them."""
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(cache).expanduser()


def cached_config(name: str, revision: str | None) -> Path | None:
    """The cached config.json of `name` at `revision` (a branch or tag through refs/, or a
    commit hash), found without importing huggingface_hub (a tenth of a second), or None."""
    folder = hub_cache_dir() / ("models--" + name.replace("/", "--"))
    ref = revision or "main"
    commit = ref if _COMMIT.match(ref) else None
    if commit is None:
        ref_file = folder / "refs" / ref
        if not ref_file.exists():
            return None
        commit = _read_cached(ref_file, name, f"refs/{ref}").strip()
        if not _COMMIT.match(commit):
            # huggingface_hub would follow it as a path: say what is wrong instead.
            raise FFNRuntimeError(
                _("--model {name}: the cache's refs/{ref} holds no commit hash ({ref_file}); remove it to download again").format(
                    name=name, ref=ref, ref_file=ref_file
                )
            )
    file = folder / "snapshots" / commit / "config.json"
    return file if file.exists() else None


def _download(name: str, revision: str | None) -> str:
    cached = cached_config(name, revision)
    if cached is not None:
        return str(cached)
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ImportError:
        raise FFNRuntimeError(_("--model needs huggingface_hub: pip install 'ffn-cli[hub]' (or give --config)")) from None
    where = name + (f" at revision {revision}" if revision else "")
    try:
        # The cache answers without a request; only a name it lacks goes to the Hub.
        return str(huggingface_hub.hf_hub_download(name, "config.json", revision=revision, local_files_only=True))
    except (errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled):
        pass
    except errors.HFValidationError as exc:
        raise FFNError("model", name, _("not a valid model id or revision ({first_line})").format(first_line=first_line(exc))) from None
    if _offline():
        raise FFNRuntimeError(
            _("--model {where}: not in the local cache and HF_HUB_OFFLINE is set; unset it to download config.json").format(where=where)
        )
    try:
        # One HEAD request, no retries, huggingface_hub's short metadata timeout: it tells a
        # missing, gated or unreachable model apart before anything is downloaded.
        url = huggingface_hub.hf_hub_url(name, "config.json", revision=revision)
        huggingface_hub.get_hf_file_metadata(url, timeout=huggingface_hub.constants.HF_HUB_ETAG_TIMEOUT)
        return str(huggingface_hub.hf_hub_download(name, "config.json", revision=revision))
    except errors.GatedRepoError:
        raise FFNRuntimeError(
            _("--model {name}: a gated model; accept its terms on huggingface.co, then log in (hf auth login) or set HF_TOKEN").format(
                name=name
            )
        ) from None
    except errors.RepositoryNotFoundError:
        raise FFNRuntimeError(
            _("--model {name}: no such model on the Hugging Face Hub (or it is private: log in or set HF_TOKEN)").format(name=name)
        ) from None
    except errors.RevisionNotFoundError:
        raise FFNRuntimeError(_("--model {name}: no revision {revision!r}").format(name=name, revision=revision)) from None
    except errors.RemoteEntryNotFoundError:
        raise FFNRuntimeError(_("--model {where}: the repository has no config.json").format(where=where)) from None
    except errors.HfHubHTTPError as exc:
        raise FFNRuntimeError(_("--model {where}: the Hub answered {first_line}").format(where=where, first_line=first_line(exc))) from None
    except errors.HFValidationError as exc:
        raise FFNError("model", name, _("not a valid model id or revision ({first_line})").format(first_line=first_line(exc))) from None
    except Exception as exc:  # httpx's request errors, found by name (_is_network_error), and OSErrors; the rest raised on
        if not _is_network_error(exc):
            raise
        raise FFNRuntimeError(
            _("--model {where}: cannot reach the Hugging Face Hub ({first_line}) and it is not cached").format(
                where=where, first_line=first_line(exc)
            )
        ) from None


def _is_network_error(exc: BaseException) -> bool:
    """OSErrors and the HTTP client's request errors (httpx's, whatever its package is named)."""
    if isinstance(exc, (OSError, ConnectionError, TimeoutError)):
        return True
    return any(c.__module__.split(".")[0].startswith("httpx") and c.__name__ == "RequestError" for c in type(exc).__mro__)
