"""The profile file: where it lives, that it reads back whole, and its row for --gpu this."""

from __future__ import annotations

import pytest

from ffn_cli.hardware import find_gpu
from ffn_cli.hardware.profile import ProfileError, load_profile, profile_path, save_profile
from tests.test_predict import _profile


def test_saved_under_xdg_cache_home_and_read_back(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(ProfileError, match="ffn hardware --measure"):
        load_profile()
    profile = _profile()
    assert save_profile(profile) == tmp_path / "cache" / "ffn" / "profiles" / "this.json" == profile_path()
    assert load_profile() == profile


def test_without_xdg_the_home_cache(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert profile_path() == tmp_path / ".cache" / "ffn" / "profiles" / "this.json"


def test_gpu_this_is_the_measured_peaks(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    save_profile(_profile())
    gpu = find_gpu("this")
    assert gpu.key == "this" and gpu.bandwidth_gbps == 10.0
    assert gpu.tflops["fp32"] == pytest.approx(0.1)  # the synthetic grid runs at 1e11 FLOP/s


def test_a_broken_file_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    profile_path().parent.mkdir(parents=True)
    profile_path().write_text("{}")
    with pytest.raises(ProfileError, match="measure"):
        load_profile()
