"""ffn_cli.hardware: the GPU table (every row sourced, dense peaks), --gpu look-up with
did-you-mean, CUDA device names → rows, and `ffn hardware`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.hardware import DTYPES, GPUS, SOURCES, UnknownGPU, find_gpu, gpu_for_device_name, ridge_flop_per_byte
from ffn_cli.hardware.dtypes import peak_dtype_key

DOC = Path(__file__).resolve().parent.parent / "docs" / "hardware.md"
runner = CliRunner()

# The GPUs the table must know (by --gpu key).
REQUIRED = (
    "a100-40gb",
    "a100-80gb",
    "h100",
    "h100-pcie",
    "h200",
    "h20",
    "b200",
    "l4",
    "l40s",
    "a10g",
    "rtx-4090",
    "rtx-5090",
    "mi300x",
    "mi325x",
)


def test_every_required_gpu_is_in_the_table() -> None:
    keys = {g.key for g in GPUS}
    assert set(REQUIRED) <= keys
    assert len(keys) == len(GPUS)  # keys are unique


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.key)
def test_every_row_has_a_source_cited_in_the_docs(gpu) -> None:  # type: ignore[no-untyped-def]
    doc = DOC.read_text(encoding="utf-8")
    assert gpu.source in SOURCES
    title, where = SOURCES[gpu.source]
    assert title and where
    # The docs' sources table names the key with the document it stands for.
    assert re.search(rf"^\| `{re.escape(gpu.source)}` \|", doc, flags=re.MULTILINE), gpu.source
    # And the GPU's own row in the docs' table shows its source key.
    assert re.search(rf"^\| `{re.escape(gpu.key)}` \|.*`{re.escape(gpu.source)}`", doc, flags=re.MULTILINE), gpu.key


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.key)
def test_rows_are_sane(gpu) -> None:  # type: ignore[no-untyped-def]
    assert gpu.memory_gb > 0 and gpu.bandwidth_gbps > 0
    assert set(gpu.tflops) <= set(DTYPES)
    rates = gpu.tflops
    if "fp32" in rates:
        # tensor-core half precision is never slower than plain float32; fp8 twice bf16 where both exist
        assert rates.get("bf16", rates.get("fp16", rates["fp32"])) >= rates["fp32"]
    if "fp8" in rates and "bf16" in rates:
        assert rates["fp8"] == pytest.approx(2 * rates["bf16"], rel=0.02)
    if not rates:
        assert gpu.notes  # an empty row says why


def test_dense_figures_are_half_the_sparse_datasheet_figures() -> None:
    # H100 SXM datasheet (with sparsity): bf16 1,979, fp8 3,958, tf32 989 TFLOP/s.
    h100 = find_gpu("h100")
    assert h100.tflops["bf16"] * 2 == pytest.approx(1979, abs=0.5)
    assert h100.tflops["fp8"] * 2 == pytest.approx(3958, abs=0.5)
    assert h100.tflops["tf32"] * 2 == pytest.approx(989, abs=0.5)
    assert h100.bandwidth_gbps == 3350 and h100.memory_gb == 80
    # HGX B200 datasheet, 8 GPUs, with sparsity: fp4 144 PFLOP/s → 9 PFLOP/s dense per GPU.
    assert find_gpu("b200").tflops["fp4"] == 144_000 / 8 / 2


def test_ridge_points_by_hand() -> None:
    # 989.5 TFLOP/s over 3.35 TB/s = 989.5 / 3.35 = 295.37… FLOP per byte
    assert find_gpu("h100").ridge("bf16") == pytest.approx(295.373, abs=1e-3)
    assert ridge_flop_per_byte(989.5, 4800) == pytest.approx(206.146, abs=1e-3)
    assert find_gpu("a10g").ridge("bf16") is None


@pytest.mark.parametrize(
    ("device_name", "expected"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM"),
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA H20", "NVIDIA H20"),
        ("NVIDIA B200", "NVIDIA B200 (HGX)"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"),
        ("NVIDIA A10", "NVIDIA A10"),
        ("NVIDIA A10G", "NVIDIA A10G"),
        ("NVIDIA L4", "NVIDIA L4"),
        ("NVIDIA L40", "NVIDIA L40"),
        ("NVIDIA L40S", "NVIDIA L40S"),
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
        ("NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 5090"),
        ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "NVIDIA V100 PCIe"),
        ("Tesla T4", "NVIDIA T4"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ],
)
def test_cuda_device_names_find_their_row(device_name: str, expected: str) -> None:
    gpu = gpu_for_device_name(device_name)
    assert gpu is not None and gpu.name == expected


def test_an_unknown_device_has_no_row() -> None:
    assert gpu_for_device_name("Intel Arc A770") is None


def test_peak_dtype_key() -> None:
    assert peak_dtype_key("float32", tf32=True) == "tf32" and peak_dtype_key("float32", tf32=False) == "fp32"
    assert peak_dtype_key("bfloat16", tf32=True) == "bf16" and peak_dtype_key("float16", tf32=False) == "fp16"


@pytest.mark.parametrize(("typed", "key"), [("H100", "h100"), ("NVIDIA H100 SXM", "h100"), ("h100 sxm5", "h100"), ("RTX 4090", "rtx-4090")])
def test_find_gpu_forgives_case_spaces_and_vendor(typed: str, key: str) -> None:
    assert find_gpu(typed).key == key


def test_a_wrong_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownGPU) as info:
        find_gpu("h10")
    assert info.value.suggestions[0] == "h100"


def test_ffn_hardware_lists_every_gpu_and_json_carries_the_same() -> None:
    result = runner.invoke(app, ["hardware", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [g["key"] for g in data["gpus"]] == [g.key for g in GPUS]
    h100 = next(g for g in data["gpus"] if g["key"] == "h100")
    assert h100["dense_tflops"]["bf16"] == 989.5 and h100["source"]["key"] == "nvidia-h100"


def test_ffn_hardware_wrong_gpu_is_one_line_with_did_you_mean() -> None:
    result = runner.invoke(app, ["hardware", "--gpu", "h10"])
    assert result.exit_code == 2
    assert "did you mean h100" in result.stderr and "Traceback" not in result.output


def test_ffn_hardware_table_fits_80_columns() -> None:
    result = runner.invoke(app, ["hardware"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "1670.5" in result.stdout and "989.5" in result.stdout  # numbers whole


def test_the_docs_table_is_the_table() -> None:
    from ffn_cli.render.hardware import hardware_markdown, sources_markdown

    doc = DOC.read_text(encoding="utf-8")
    assert hardware_markdown(list(GPUS)) in doc
    assert sources_markdown() in doc


def test_the_hardware_package_imports_nothing_else_of_ours() -> None:
    package = Path(__file__).resolve().parent.parent / "ffn_cli" / "hardware"
    for path in package.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*(from|import) ffn_cli", line):
                # its words are Messages, said in the reader's language; the profile is written by the
                # one writer, and a place it cannot be written is the tool's runtime error
                assert re.match(r"\s*(from|import) ffn_cli\.(hardware|i18n|outputs|errors)\b", line), f"{path.name}: {line}"
            assert not re.match(r"\s*(from|import) torch", line), f"{path.name}: {line}"


def test_ffn_hardware_never_imports_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nsys.argv = ['ffn', 'hardware']\nfrom ffn_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False"
