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
    "h800",
    "a800",
    "l20",
    "b300",
    "gb200",
    "gb300",
    "rtx-pro-6000",
    "mi355x",
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
        ("NVIDIA H800", "NVIDIA H800 SXM"),
        ("NVIDIA A800-SXM4-80GB", "NVIDIA A800 SXM4 80GB"),
        ("NVIDIA L20", "NVIDIA L20"),
        ("NVIDIA B300 SXM6 AC", "NVIDIA B300 (HGX)"),
        ("NVIDIA GB200", "NVIDIA GB200 (per GPU)"),
        ("NVIDIA GB300", "NVIDIA GB300 (per GPU)"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX PRO 6000 Blackwell"),
        ("AMD Instinct MI355X", "AMD Instinct MI355X"),
    ],
)
def test_cuda_device_names_find_their_row(device_name: str, expected: str) -> None:
    gpu = gpu_for_device_name(device_name)
    assert gpu is not None and gpu.full_name == expected


def test_an_unknown_device_has_no_row() -> None:
    assert gpu_for_device_name("Intel Arc A770") is None


def test_peak_dtype_key() -> None:
    assert peak_dtype_key("float32", tf32=True) == "tf32" and peak_dtype_key("float32", tf32=False) == "fp32"
    assert peak_dtype_key("bfloat16", tf32=True) == "bf16" and peak_dtype_key("float16", tf32=False) == "fp16"


@pytest.mark.parametrize(("typed", "key"), [("H100", "h100"), ("NVIDIA H100 SXM", "h100"), ("h100 sxm5", "h100"), ("RTX 4090", "rtx-4090")])
def test_find_gpu_forgives_case_spaces_and_vendor(typed: str, key: str) -> None:
    assert find_gpu(typed).key == key


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        ("rtx4090", "rtx-4090"),
        ("RTX-4090", "rtx-4090"),
        ("rtx_4090", "rtx-4090"),
        ("GeForce RTX 4090", "rtx-4090"),
        ("rtx5090", "rtx-5090"),
        ("h100pcie", "h100-pcie"),
        ("H100 PCIe", "h100-pcie"),
        ("h100-SXM", "h100"),
        ("MI-300X", "mi300x"),
        ("mi 325x", "mi325x"),
        ("A100 80GB", "a100-80gb"),
        ("a100sxm440gb", "a100-40gb"),
        ("L40-S", "l40s"),
        ("NVIDIA B200 (HGX)", "b200"),
    ],
)
def test_find_gpu_forgives_dashes_and_spaces_inside_the_name(typed: str, key: str) -> None:
    assert find_gpu(typed).key == key


@pytest.mark.parametrize(
    ("device", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),  # nvidia-smi in NVIDIA/nccl#1264
        ("NVIDIA H800 PCIe", "h800"),  # the table holds the SXM part alone
        ("Tesla V100-SXM2-32GB", "v100"),
        ("NVIDIA GH200 480GB", "h200"),  # a pattern matches more than its row: never taken as that row
    ],
)
def test_a_device_name_as_the_driver_reports_it_is_refused_naming_its_row(device: str, key: str) -> None:
    """A driver's name is refused, the row its pattern matches named first: a GH200 is no H200, and
    a row taken for it would size the wrong memory."""
    with pytest.raises(UnknownGPU) as refused:
        find_gpu(device)
    assert refused.value.suggestions[0] == key


def test_gpu_names_without_their_separators_stay_apart() -> None:
    """No two rows' keys, aliases or names read alike once case, spaces and dashes are gone
    (h100-nvl is not h100, a10 not a100)."""
    for gpu in GPUS:
        for other in GPUS:
            if other is not gpu:
                assert find_gpu(other.key) is other and find_gpu(other.name) is other


def test_ffn_params_takes_rtx4090_written_as_one_word() -> None:
    result = runner.invoke(app, ["params", "-v", "relu", "--gpu", "rtx4090", "--json"])
    assert result.exit_code == 0, result.output
    typed = runner.invoke(app, ["params", "-v", "relu", "--gpu", "rtx-4090", "--json"])
    assert json.loads(result.stdout) == json.loads(typed.stdout)


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


def test_a_rows_scope_is_said_in_the_readers_language() -> None:
    """A superchip's row is per GPU: said after its name in Chinese too, the JSON and the docs in English."""
    zh = runner.invoke(app, ["--lang", "zh", "hardware"], env={"COLUMNS": "80"})
    assert zh.exit_code == 0 and "per GPU" not in zh.stdout and "NVIDIA GB300" in zh.stdout and "（每 GPU）" in zh.stdout
    fit = runner.invoke(app, ["--lang", "zh", "params", "--preset", "gpt2", "--gpu", "gb200"], env={"COLUMNS": "100"})
    assert fit.exit_code == 0 and "NVIDIA GB200（每 GPU）" in fit.stdout and "per GPU" not in fit.stdout
    data = json.loads(runner.invoke(app, ["hardware", "--json"]).stdout)
    assert next(g for g in data["gpus"] if g["key"] == "gb300")["name"] == "NVIDIA GB300 (per GPU)"
    assert find_gpu("NVIDIA GB300 (per GPU)").key == "gb300" and find_gpu("NVIDIA GB300").key == "gb300"


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


def test_the_terminal_table_shows_each_gpus_link() -> None:
    """What --tp and --ep communicate over: the link's GB/s in its column, its name under the GPU."""
    result = runner.invoke(app, ["hardware"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].split()[3] == "link"
    rows = {line.split()[0]: line.split() for line in lines if line.split() and line.split()[0] in ("h100-nvl", "mi300x", "a800")}
    # NVIDIA's H100 NVL brief: 600 GB/s over the pair's bridge; AMD's MI300X: 7 Infinity Fabric links, 896 GB/s
    assert rows["h100-nvl"][3] == "600" and rows["mi300x"][3] == "896" and rows["a800"][3] == "—"
    words = " ".join(result.stdout.split())
    assert "NVLink bridge, pairs" in words and "7 × Infinity Fabric" in words
    zh = runner.invoke(app, ["--lang", "zh", "hardware", "--gpu", "h100-nvl"], env={"COLUMNS": "80"})
    assert "互连" in zh.stdout and "NVLink bridge" not in zh.stdout


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
                # one writer, and a place it cannot be written is the tool's runtime error; a profile's numbers are
                # checked by the one rule for a number ffn did not make (values)
                assert re.match(r"\s*(from|import) ffn_cli\.(hardware|i18n|outputs|errors|values)\b", line), f"{path.name}: {line}"
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


# The GPUs people deploy on in 2026, as the public sources give them (dense TFLOP/s; memory as
# marketed, GB; nvidia-smi's MiB; HBM GB/s; GPU-to-GPU GB/s): (bf16, fp8, fp4, GB, MiB, GB/s, link).
# None where no source gives the figure or the sources disagree.
DEPLOYED = {
    "h800": (989, 1979, None, 80, 81_559, 3350, 400),  # aiconfigurator h800_sxm.yaml: the H100 SXM, NVLink 400
    "a800": (312, None, None, 80, 81_920, 2039, None),  # LLM-Viewer's A800; its NVLink figure is disputed
    "l20": (119.5, 239, None, 48, 46_068, 864, 64),  # Tom's Hardware; ECC on
    "b200": (2250, 4500, 9000, 180, 183_359, 7700, 1800),  # nvidia-smi in TensorRT-LLM #10278
    "b300": (2250, 4500, None, 288, 275_040, 7700, 1800),  # fp4 13,125–14,000 and 7.7–8.0 TB/s disputed
    "gb200": (2500, 5000, 10_000, 186, 189_471, 8000, 1800),
    "gb300": (2500, 5000, 15_000, 288, 284_208, 8000, 1800),
    "rtx-pro-6000": (None, None, None, 96, 97_887, 1792, 128),  # only sparse "AI TOPS" published
    "mi355x": (None, None, None, 288, None, 8000, None),  # dense vs sparse disputed; link ~1,075 disputed
}


@pytest.mark.parametrize("key", sorted(DEPLOYED))
def test_the_deployed_gpus_carry_the_sources_figures(key: str) -> None:
    bf16, fp8, fp4, gb, mib, gbps, link = DEPLOYED[key]
    gpu = find_gpu(key)
    for dtype, expected in (("bf16", bf16), ("fp8", fp8), ("fp4", fp4)):
        if expected is None:
            assert dtype not in gpu.tflops
        else:
            assert gpu.tflops[dtype] == pytest.approx(expected, abs=0.5)  # the H100's 989.5 is printed 989
    assert (gpu.memory_gb, gpu.driver_mib, gpu.bandwidth_gbps, gpu.link_gbps) == (gb, mib, gbps, link)
    if None in (bf16, fp8) or link is None:
        assert any("disagree" in note or "not given" in note for note in gpu.notes)


def test_the_gb200_ridge_by_hand() -> None:
    # 2,500 TFLOP/s over 8 TB/s: 2.5e15 / 8e12 = 312.5 FLOP per byte; the L20, 119.5e12 / 864e9.
    assert find_gpu("gb200").ridge("bf16") == pytest.approx(312.5)
    assert find_gpu("l20").ridge("fp8") == pytest.approx(239e12 / 864e9)
    assert find_gpu("rtx-pro-6000").ridge("bf16") is None


def test_the_hardware_service_answers_the_table_the_command_prints() -> None:
    # The service's frozen answer, shown by the presenter the API would use, is the command's --json.
    from dataclasses import FrozenInstanceError

    from ffn_cli.render.presenters.hardware import present
    from ffn_cli.requests.hardware import HardwareRequest
    from ffn_cli.services.hardware import hardware
    from ffn_cli.services.results import GPUTable

    every = hardware(HardwareRequest())
    assert isinstance(every, GPUTable) and every.gpus == tuple(GPUS) and every.cpu is None
    one = hardware(HardwareRequest(gpu="H100"))
    assert isinstance(one, GPUTable) and one.gpus == (find_gpu("h100"),)
    with pytest.raises(FrozenInstanceError):
        one.gpus = ()  # type: ignore[misc]
    for answer, args in ((every, []), (one, ["--gpu", "H100"])):
        printed = runner.invoke(app, ["hardware", *args, "--json"])
        assert printed.exit_code == 0 and json.loads(printed.stdout) == present(answer).data()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"measure": True, "gpu": "h100"}, "measure"),
        ({"measure": True, "threads": 0}, "threads"),
        ({"quick": True, "threads": 2}, "quick"),
        ({"threads": 2}, "threads"),
        ({"dtype": "int8"}, "dtype"),
    ],
)
def test_a_hardware_request_refuses_what_its_answer_would_ignore(options: dict, named: str) -> None:
    from ffn_cli.errors import FFNError
    from ffn_cli.requests.hardware import HardwareRequest

    with pytest.raises(FFNError) as refused:
        HardwareRequest(**options)
    assert refused.value.option == named
