"""The forecast from a profile: interpolation exact at grid points and hand-checked between
them, FLOPs and bytes by hand, --gpu this read from a synthetic profile file."""

from __future__ import annotations

import io
import json
import math

from ffn_cli.costs.forward_ops import forward_ops
from ffn_cli.costs.roofline.model_pass import PassCase
from ffn_cli.costs.roofline.one_ffn import ffn_passes
from ffn_cli.hardware.predict import elementwise_seconds, gemm_seconds
from ffn_cli.hardware.profile import DeviceProfile, ElementwisePoint, GemmPoint, save_profile
from ffn_cli.spec import FFNSpec

AXIS = (1, 16, 256)
NK = (256, 4096)


def _grid(rate: float = 1e11, skew: bool = False) -> tuple[GemmPoint, ...]:
    points = []
    for m in AXIS:
        for n in NK:
            for k in NK:
                r = rate * (m if skew else 1)
                points.append(GemmPoint(m, n, k, 2 * m * n * k / r))
    return tuple(points)


def _profile(per_element_s: float = 1e-9, fixed_s: float = 5e-6) -> DeviceProfile:
    sizes = (1 << 10, 1 << 20)
    ew = {op: tuple(ElementwisePoint(s, s * per_element_s) for s in sizes) for op in ("relu", "silu", "mul", "add", "gelu")}
    return DeviceProfile(
        "this",
        "cpu",
        "test CPU",
        1,
        "0",
        "2026-01-01T00:00:00Z",
        1 << 30,
        "cold",
        10.0,
        1e-6,
        {"fp32": _grid()},
        {"fp32": ew},
        {"swiglu": fixed_s, "relu": fixed_s},
    )


def test_a_grid_point_is_its_measured_time() -> None:
    grid = _grid(skew=True)
    for p in grid:
        assert math.isclose(gemm_seconds(grid, p.m, p.n, p.k), p.seconds, rel_tol=1e-12)


def test_between_points_the_time_is_affine_along_each_axis() -> None:
    # A product that costs a fixed 10 µs plus 1 ns per (row, column, inner) triple: multilinear,
    # so trilinear interpolation gives it exactly anywhere inside the grid.
    def cost(m: int, n: int, k: int) -> float:
        return 1e-5 + 1e-9 * m * n * k

    grid = tuple(GemmPoint(m, n, k, cost(m, n, k)) for m in AXIS for n in NK for k in NK)
    for m, n, k in ((4, 256, 256), (100, 1000, 3000), (255, 4095, 257)):
        assert math.isclose(gemm_seconds(grid, m, n, k), cost(m, n, k), rel_tol=1e-9)
    # Halfway along M, on the edge of N and K: the mean of the two measured neighbours, by hand.
    assert math.isclose(gemm_seconds(grid, 136, 256, 4096), (cost(16, 256, 4096) + cost(256, 256, 4096)) / 2, rel_tol=1e-9)


def test_beyond_the_grid_the_edge_rate_holds() -> None:
    grid = _grid()
    assert math.isclose(gemm_seconds(grid, 4096, 8192, 8192), 2 * 4096 * 8192 * 8192 / 1e11, rel_tol=1e-9)


def test_elementwise_interpolates_in_log_space() -> None:
    points = (ElementwisePoint(100, 1e-6), ElementwisePoint(10_000, 1e-4))
    assert math.isclose(elementwise_seconds(points, 1000), 1e-5, rel_tol=1e-9)  # log-midpoint
    assert math.isclose(elementwise_seconds(points, 20_000), 2e-4, rel_tol=1e-9)  # edge bandwidth
    assert elementwise_seconds(points, 10) == 1e-6  # the smallest call's own cost


def test_swiglu_ops_and_bytes_by_hand() -> None:
    spec = FFNSpec(variant="swiglu", d_model=512)  # d_ff 1536 by the 2/3 rule, multiple of 256
    ops = forward_ops(spec, 64)
    assert ops is not None
    assert sorted((g.m, g.n, g.k) for g in ops.gemms) == [(64, 512, 1536), (64, 1536, 512), (64, 1536, 512)]
    assert sum(2 * g.m * g.n * g.k for g in ops.gemms) == 3 * 2 * 64 * 512 * 1536
    assert [(p.op, p.elements) for p in ops.passes] == [("silu", 64 * 1536), ("mul", 64 * 1536)]
    (one,) = ffn_passes(spec, [PassCase("prefill", 1, 64, 4)], "h100", "float32")
    assert one.cost.weight_bytes == 3 * 512 * 1536 * 4
    assert one.cost.activation_bytes == 2 * 64 * 512 * 4


def test_mixtures_are_not_priced() -> None:
    assert forward_ops(FFNSpec(variant="moe", d_model=64), 8) is None


def test_gpu_this_reads_the_profile(runner, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ffn_cli.cli import app

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    missing = runner.invoke(app, ["params", "--variant", "swiglu", "-d", "512", "--gpu", "this"])
    assert missing.exit_code != 0 and "ffn hardware --measure" in missing.output
    assert len(missing.output.strip().splitlines()) == 1
    path = save_profile(_profile())
    assert path == tmp_path / "ffn" / "profiles" / "this.json"
    args = ["params", "--variant", "swiglu", "-d", "512", "--gpu", "this", "--batch", "1", "--seq-len", "64", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    ffn = json.loads(result.output)["roofline"]["cases"][0]["ffn_one_layer"]
    tokens, d, f = 64, 512, 1536
    by_hand = 3 * 2 * tokens * d * f / 1e11 + 2 * tokens * f * 1e-9 + 5e-6  # GEMMs, silu and mul, the call
    assert math.isclose(ffn["predicted_s"], by_hand, rel_tol=1e-9)
    assert ffn["time_lower_bound_s"] <= ffn["predicted_s"]


def test_params_gpu_this_never_imports_torch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    code = (
        "import sys\nfrom ffn_cli.hardware.profile import save_profile\nfrom tests.test_predict import _profile\n"
        "save_profile(_profile())\nsys.argv = ['ffn', 'params', '-v', 'swiglu', '--gpu', 'this']\n"
        "from ffn_cli.cli import main\ntry:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_bench_says_when_the_profile_was_measured_with_other_threads(runner, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ffn_cli.cli import app

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    save_profile(_profile())  # measured with 1 thread
    args = ["bench", "--variant", "relu", "-d", "32", "--batch", "1", "--seq-len", "4", "--repeats", "3", "--json"]
    other = json.loads(runner.invoke(app, [*args, "--threads", "2"]).output)
    said = [w for w in other["warnings"] if "measured at --threads 1 and this run uses --threads 2" in w]
    assert len(said) == 1 and "ffn hardware --measure --threads 2" in said[0]
    same = json.loads(runner.invoke(app, [*args, "--threads", "1"]).output)
    assert not any("profile was measured" in w for w in same["warnings"])


def test_bench_shows_each_forecast_beside_its_measurement(runner, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ffn_cli.cli import app

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    save_profile(_profile())
    args = ["bench", "-v", "swiglu", "-d", "256", "-b", "1", "-s", "16", "--repeats", "3", "--warmup-ms", "0", "--threads", "1"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    (case,) = json.loads(result.output)["results"]
    tokens, d, f = 16, 256, 768  # d_ff by the 2/3 rule, a multiple of 256
    by_hand_ms = (3 * 2 * tokens * d * f / 1e11 + 2 * tokens * f * 1e-9 + 5e-6) * 1e3  # GEMMs, silu and mul, the call
    assert math.isclose(case["predicted_ms"], by_hand_ms, rel_tol=1e-9)
    assert math.isclose(case["prediction_error_pct"], (by_hand_ms / case["median_ms"] - 1) * 100, rel_tol=1e-9)
    shown = runner.invoke(app, args, env={"COLUMNS": "60"})
    assert shown.exit_code == 0, shown.output
    assert "forecast error over 1 cases" in " ".join(shown.output.replace("\u00a0", " ").split())


def test_a_wrapped_forecast_line_keeps_each_number_with_its_unit() -> None:
    from types import SimpleNamespace

    from rich.console import Console

    import ffn_cli
    from ffn_cli.render.prediction import prediction_lines

    case = SimpleNamespace(
        label="swiglu d256 f768 T16 float32 eager", median_ms=1.226, predicted_ms=0.9347, prediction_error_pct=-23.76, bound_ms=0.207
    )
    for language, expected in (("en", "predicted 0.9347 ms (-23.8 %)"), ("zh", "预测 0.9347 ms（-23.8 %）")):
        ffn_cli.set_language(language)
        try:
            for width in range(30, 100):
                console = Console(width=width, file=io.StringIO(), color_system=None)
                console.print(*prediction_lines([case]))  # type: ignore[list-item]
                lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
                assert not [line for line in lines if line.lstrip().startswith(("%", "ms"))], (language, width)
                assert not [line for line in lines if line.rstrip().endswith("≥")], (language, width)
                assert expected in " ".join(lines), (language, width)
        finally:
            ffn_cli.set_language("en")
