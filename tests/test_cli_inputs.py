"""Inputs that used to be accepted silently, or refused through the catch-all (exit 1, "run
`ffn --debug`"), now refused with one clear line and exit 2; odd environments still print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.files import read_capped

ROOT = Path(__file__).resolve().parent.parent
CATCH_ALL = "ffn --debug"
BENCH = ["bench", "--repeats", "3", "--warmup-ms", "0"]
HUGE = "9" * 5000


def _usage_error(runner: CliRunner, args: list[str], starts: str = "error: ") -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.exit_code, result.output)
    assert result.stderr.startswith(starts) and result.stderr.count("\n") == 1, result.stderr
    assert CATCH_ALL not in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["--norm", "batchnorm"], "error: --norm batchnorm: choose one of layernorm, rmsnorm"),
        (["--n-kv-heads", "3"], "error: --n-kv-heads 3: shapes the Transformer block"),
        (["--n-heads", "0", "--n-kv-heads", "9223372036854775808"], "error: --n-heads 0"),
        (["--norm", "rmsnorm"], "error: --norm rmsnorm: shapes the Transformer block"),
        (["--pre-norm"], "error: --pre-norm: shapes the Transformer block"),
    ],
)
def test_trace_attention_options_need_the_block(runner: CliRunner, args: list[str], starts: str) -> None:
    _usage_error(runner, ["trace", "--device", "meta", *args], starts)


def test_trace_attention_options_with_the_block_still_run(runner: CliRunner) -> None:
    result = runner.invoke(app, ["trace", "--device", "meta", "-d", "64", "--block", "--n-heads", "4", "--n-kv-heads", "2", "--json"])
    assert result.exit_code == 0, result.output


def test_list_presets_takes_no_other_option(runner: CliRunner) -> None:
    args = ["params", "--list-presets", "--d-model", "-5", "--variant", "nope", "--dtype", "int4", "--tp", "0"]
    _usage_error(runner, args, "error: ")
    for extra in (["--dtype", "int4"], ["--tp", "0"], ["--preset", "gpt2"]):
        _usage_error(runner, ["params", "--list-presets", *extra], "error: ")
    assert runner.invoke(app, ["params", "--list-presets", "--json"]).exit_code == 0


@pytest.mark.parametrize("option", ["--dtype", "--variant"])
def test_params_empty_values_are_refused(runner: CliRunner, option: str) -> None:
    _usage_error(runner, ["params", option, ""], f"error: {option} '':")


@pytest.mark.parametrize("command", ["trace", "bench"])
@pytest.mark.parametrize("option", ["--dtype", "--device"])
@pytest.mark.parametrize("value", ["", " "])
def test_run_commands_refuse_an_empty_device_or_dtype(runner: CliRunner, command: str, option: str, value: str) -> None:
    # trace read '' as its default and ran.
    _usage_error(runner, [command, "-d", "8", option, value], f"error: {option} '")


def test_the_api_refuses_an_empty_device_or_dtype() -> None:
    import torch

    import ffn_cli

    for option in ("device", "dtype"):
        with pytest.raises(ffn_cli.FFNError, match=f"^{option}='' is invalid"):
            ffn_cli.trace(torch.nn.Linear(4, 4), torch.randn(2, 4), **{option: ""})


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["--seq-len", "²"], "error: --seq-len ²:"),
        (["--d-model", "16,²"], "error: --d-model 16,²:"),
        (["--d-model", HUGE], "error: --d-model 9999999999…(5000 digits):"),
        (["--seq-len", "8," + HUGE], "error: --seq-len 9999999999…(5000 digits):"),
    ],
)
def test_bench_odd_integers_are_usage_errors(runner: CliRunner, args: list[str], starts: str) -> None:
    _usage_error(runner, [*BENCH, *args], starts)


@pytest.mark.parametrize("device", ["cuda:x", "cuda:-1", "cuda:²", "cuda:99999", "cpu:0", "cuda:"])
@pytest.mark.parametrize(
    "command", [["trace"], ["trace", "--tp", "2"], BENCH, [*BENCH, "--tp", "2"]], ids=["trace", "trace-tp", "bench", "bench-tp"]
)
def test_malformed_devices_are_usage_errors_before_cuda_is_asked(runner: CliRunner, device: str, command: list[str]) -> None:
    _usage_error(runner, [*command, "--device", device], f"error: --device {device}:")


def test_a_huge_integer_in_a_config_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": ' + HUGE + "}")
    _usage_error(runner, ["params", "--config", str(config)], f"error: --config {config}: holds a number too long")


def test_an_unreadable_model_folder_is_a_usage_error(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root reads every folder, so the refusal the kernel gives others is simulated.
    real_is_file = Path.is_file

    def is_file(self: Path) -> bool:
        if self.parent == tmp_path:
            raise PermissionError(13, "Permission denied")
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    _usage_error(runner, ["params", "--config", str(tmp_path)], f"error: --config {tmp_path}: cannot be read: Permission denied")


def test_a_config_read_that_never_ends_times_out(tmp_path: Path) -> None:
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    writer_ready, reader_done = threading.Event(), threading.Event()

    def writer() -> None:  # opens, writes a little, and keeps the pipe open: like /proc/kmsg
        with open(fifo, "wb") as f:
            f.write(b'{"model_type": ')
            f.flush()
            writer_ready.set()
            # Open until the read has given up, however slowly the machine runs; a read that did
            # not time out would see the pipe close a minute later and return, failing below.
            reader_done.wait(60)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return
    assert writer_ready.wait(60)
    os.close(fd)
    try:
        with pytest.raises(TimeoutError):
            read_capped(fifo, 1 << 20, timeout_s=0.5)
    finally:
        reader_done.set()
        thread.join()


def test_the_size_cap_does_not_trust_st_size(tmp_path: Path) -> None:
    status = Path("/proc/self/status")
    if not status.exists() or status.stat().st_size != 0:
        pytest.skip("needs a /proc file that reports size 0")
    assert read_capped(status, 10, timeout_s=5) is None  # st_size says 0; the content is longer
    assert read_capped(status, 1 << 20, timeout_s=5).startswith(b"Name:")  # type: ignore[union-attr]


# --- the environment: run as a user runs it ------------------------------------------------------


def _run(args: list[str], env: dict[str, str] | None = None, shell_suffix: str = "") -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    if shell_suffix:
        command = " ".join([sys.executable, "-m", "ffn_cli", *args]) + shell_suffix
        return subprocess.run(["sh", "-c", command], env=full_env, capture_output=True, timeout=120)
    return subprocess.run([sys.executable, "-m", "ffn_cli", *args], env=full_env, capture_output=True, timeout=120)


def test_closed_stdout_is_refused() -> None:
    done = _run(["params"], shell_suffix=" >&-")
    assert done.returncode == 2
    assert done.stderr.decode() == "error: standard output is closed; ffn prints its results there\n"


@pytest.mark.parametrize("args", [["params"], ["variants"], ["params", "--preset", "mixtral-8x7b"]])
def test_an_ascii_terminal_gets_ascii_tables(args: list[str]) -> None:
    done = _run(args, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode("ascii")  # raises if anything but ASCII was written
    assert "2,099,712" in text or "relu" in text or "46,702,792,704" in text
    widths = {len(line) for line in text.splitlines() if "|" in line}
    assert len(widths) <= 3  # the columns still line up: one character for each symbol


def test_ascii_errors_stay_one_line() -> None:
    done = _run(["bench", "--seq-len", "²"], env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 2 and done.stderr.decode("ascii").count("\n") == 1


@pytest.mark.parametrize("columns", ["0", "²", "abc", HUGE[:50]])
def test_an_unusable_columns_value_still_prints(columns: str) -> None:
    done = _run(["params", "--json"], env={"COLUMNS": columns})
    assert done.returncode == 0 and json.loads(done.stdout)["total_params"] == 2_099_712
    done = _run(["params"], env={"COLUMNS": columns})
    assert done.returncode == 0 and "2,099,712" in done.stdout.decode()


_NO_TEMP_DIR = """
import sys, tempfile
def gettempdir():
    raise FileNotFoundError(2, "No usable temporary directory found in ['/tmp', '/var/tmp']")
tempfile.gettempdir = gettempdir
from ffn_cli.cli import main
sys.argv = ["ffn", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", [["trace", "--device", "meta"], ["bench", "--repeats", "3"]])
def test_no_writable_temp_folder_is_one_line(command: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _NO_TEMP_DIR, *command], env=env, capture_output=True, timeout=120)
    assert done.returncode == 1
    assert (
        done.stderr.decode() == "error: no writable temporary folder (/tmp, /var/tmp or this folder); set TMPDIR to one, torch needs it\n"
    )


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["params", "--tp", "2", "--n-heads", "0"], "error: --n-heads 0: per-rank counts are of the FFN alone"),
        (["params", "--ep", "2", "-v", "moe", "--attn-bias"], "error: --attn-bias: per-rank counts are of the FFN alone"),
        (["params", "--variant", "relu,"], "error: --variant relu,: an empty item in the comma list"),
        (["params", "--d-model=64,,"], "error: --d-model 64,,: an empty item in the comma list"),
        (["params", "-v", "relu", "-s", "128,,256"], "error: --seq-len 128,,256: an empty item"),
        (["params", "--preset", "llama-2-7b,"], "error: --preset llama-2-7b,: an empty item"),
        ([*BENCH, "--impl", "eager,"], "error: --impl eager,: an empty item"),
        ([*BENCH, "--dtype", ",float32"], "error: --dtype ,float32: an empty item"),
    ],
)
def test_values_once_accepted_with_exit_0_are_refused(runner: CliRunner, args: list[str], starts: str) -> None:
    _usage_error(runner, args, starts)


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"HF_HUB_ETAG_TIMEOUT": "abc"}, "error: HF_HUB_ETAG_TIMEOUT='abc' is not a whole number of seconds"),
        ({"HF_ENDPOINT": "http://[::1"}, "error: HF_ENDPOINT='http://[::1' is not a URL"),
        ({"HF_ENDPOINT": "ftp://example.org"}, "error: HF_ENDPOINT='ftp://example.org' is not an http(s) URL"),
        ({"XDG_CACHE_HOME": "/dev/null"}, "error: XDG_CACHE_HOME='/dev/null' puts the Hugging Face cache under /dev/null"),
        ({"HF_HOME": "/dev/null/hf"}, "error: HF_HOME='/dev/null/hf' puts the Hugging Face cache under /dev/null"),
    ],
)
def test_hugging_face_variables_that_cannot_work_are_named(environ: dict[str, str], said: str, tmp_path: Path) -> None:
    # They failed inside huggingface_hub's import: a catch-all, and a line printed on stdout.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_"))} | {"HF_HUB_OFFLINE": "1"} | environ
    if "XDG_CACHE_HOME" not in env:
        env.setdefault("HF_HOME", str(tmp_path))
    command = [sys.executable, "-m", "ffn_cli", "params", "--model", "evil/remote"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.startswith(said) and done.stderr.count("\n") == 1 and CATCH_ALL not in done.stderr


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"HF_HUB_ETAG_TIMEOUT": "abc"}, "error: HF_HUB_ETAG_TIMEOUT='abc' 不是整数秒；请改正或取消设置"),
        ({"HF_ENDPOINT": "ftp://example.org"}, "error: HF_ENDPOINT='ftp://example.org' 不是 http(s) URL"),
        ({"HF_HOME": "/dev/null/hf"}, "error: HF_HOME='/dev/null/hf' 把 Hugging Face 缓存放在 /dev/null 之下"),
    ],
)
def test_hugging_face_variables_that_cannot_work_are_named_in_chinese(environ: dict[str, str], said: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_"))} | {"HF_HUB_OFFLINE": "1", "FFN_LANG": "zh"}
    env |= environ
    command = [sys.executable, "-m", "ffn_cli", "params", "--model", "evil/remote"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.startswith(said) and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_config_number_that_is_not_finite_is_refused(runner: CliRunner, tmp_path: Path, value: str) -> None:
    # Python's json reads NaN and Infinity; a count made from them would be no number at all.
    config = tmp_path / "config.json"
    text = (ROOT / "ffn_cli" / "presets" / "deepseek-v3.json").read_text()
    config.write_text(text.replace('"routed_scaling_factor": 2.5', f'"routed_scaling_factor": {value}'))
    assert config.read_text() != text
    said = _usage_error(runner, ["params", "--config", str(config)])
    assert "must be a finite number" in said, said


def test_a_bad_config_json_from_the_hub_is_named_as_the_model(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit = "0" * 40
    repo = tmp_path / "hub" / "models--evil--remote"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{bad")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    said = _usage_error(runner, ["params", "--model", "evil/remote"])
    assert said.startswith("error: --model evil/remote: its config.json is not valid JSON"), said


def test_a_compile_cache_that_is_a_file_is_named(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/dev/null")
    result = runner.invoke(app, [*BENCH, "--compile", "-d", "8", "--d-ff", "16"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and CATCH_ALL not in result.stderr
    assert result.stderr.startswith("error: TORCHINDUCTOR_CACHE_DIR='/dev/null' is not a folder"), result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["params", "--preset", "gpt2", "--no-attn-bias"], "error: --no-attn-bias: sizes one FFN"),
        (["params", "--preset", "gpt2", "--no-bias"], "error: --no-bias: sizes one FFN"),
        ([*BENCH, "-v", "relu", "-d", "64,128,256,512", "--max-cases", "2"], "error: the sweep has 4 cases (4 d_model), more"),
        (
            [*BENCH, "-v", "relu,gelu,swiglu", "-d", "8,16", "--impl", "eager,fused", "--max-cases", "2"],
            "error: the sweep has 8 cases (3 variant × 2 d_model × 2 impl, less 4 the fused layout skips)",
        ),
    ],
)
def test_messages_say_what_was_typed(runner: CliRunner, args: list[str], said: str) -> None:
    assert _usage_error(runner, args).startswith(said)


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "--dtype", " BFLOAT16 ", "--device", " CPU ", "--mode", " Eval ", "-d", "8", "--d-ff", "16"],
        ["params", "--dtype", " BFloat16 ", "-v", " SwiGLU "],
        [*BENCH, "--dtype", " FLOAT32 , Float64", "--device", "CPU", "--cache", " HOT ", "-d", "8", "--d-ff", "16", "-b", "1", "-s", "1"],
    ],
)
def test_names_are_read_without_case_and_spaces_everywhere(runner: CliRunner, args: list[str]) -> None:
    # --device ' CPU ' was accepted while --dtype ' BFLOAT16 ' was refused.
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


# --- config.json's quantization_config, --tp, --quantize, --depth: refused as typed ----------------

TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}
TINY_LLAMA["vocab_size"] = 100
NOT_AN_OBJECT = 'must be a JSON object naming its quant_method, as {"quant_method": "fp8"}'
NOT_A_LIST = 'must be a list of module names (transformers\' own spelling: ["lm_head"])'


@pytest.mark.parametrize(
    ("quantization", "said"),
    [
        ({"quant_method": "fp8", "modules_to_not_convert": 5}, f"key quantization_config.modules_to_not_convert = 5: {NOT_A_LIST}"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": True}, f"key quantization_config.modules_to_not_convert = True: {NOT_A_LIST}"),
        (
            {"quant_method": "fp8", "modules_to_not_convert": "lm_head"},
            "key quantization_config.modules_to_not_convert = 'lm_head': one string, which transformers would read letter by letter; "
            f"{NOT_A_LIST}",
        ),
        (
            {"quant_method": "fp8", "modules_to_not_convert": ["lm_head", 5]},
            f"key quantization_config.modules_to_not_convert = ['lm_head', 5]: {NOT_A_LIST}",
        ),
        (
            {"quant_method": "fp8", "weight_block_size": [True, True]},
            "key quantization_config.weight_block_size = [True, True]: must be two positive integers, as [128, 128]",
        ),
        ({"quant_method": "gptq", "bits": 4, "group_size": True}, "key quantization_config.group_size = True: must be an integer"),
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 1.5}, "key quantization_config.q_group_size = 1.5: must be an integer"),
        ({"quant_method": "gptq", "bits": True, "group_size": 128}, "key quantization_config.bits = True: must be an integer"),
        # Neither an object: read as no quantization at all, the checkpoint counted as bf16.
        ("fp8", f"key quantization_config = 'fp8': {NOT_AN_OBJECT}"),
        ([{"quant_method": "fp8"}], f"key quantization_config = [{{'quant_method': 'fp8'}}]: {NOT_AN_OBJECT}"),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"], "weights": "fp8"}}},
            "key quantization_config.config_groups.group_0.weights = 'fp8': "
            'must be a JSON object, as {"type": "float", "num_bits": 8, "strategy": "channel"}',
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"type": "float", "num_bits": 8, "strategy": "tensor"}}},
                "ignore": "lm_head",
            },
            "key quantization_config.ignore = 'lm_head': one string, which transformers would read letter by letter; " + NOT_A_LIST,
        ),
    ],
)
def test_a_malformed_quantization_config_is_named(runner: CliRunner, tmp_path: Path, quantization: object, said: str) -> None:
    # They reached the catch-all (a TypeError), or were read: `fp8-block-TruexTrue`, one group of `True`.
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**TINY_LLAMA, "quantization_config": quantization}))
    for extra in ([], ["--gpu", "h100"]):
        assert _usage_error(runner, ["params", "--config", str(config), *extra]) == f"error: {config}: {said}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["params", "--preset", "llama-2-7b", "--tp", "3"],
            "error: --tp 3: must divide what it splits across GPUs (32 attention heads, d_ff 11,008); 2, 4, 8, 16, 32 do\n",
        ),
        (
            ["params", "--preset", "mixtral-8x7b", "--tp", "3"],
            "error: --tp 3: must divide what it splits across GPUs (32 attention heads, d_ff 14,336); 2, 4, 8, 16, 32 do\n",
        ),
        (
            ["params", "--preset", "phi-4", "--tp", "4"],
            "error: --tp 4: must divide the 10 KV heads, or be a multiple of them (each then held by tp/10 GPUs)\n",
        ),
        (
            ["params", "--preset", "llama-2-7b", "--tp", "99999999999999999999"],
            "error: --tp 99999999999999999999: must be an integer in [1, 1,024]\n",
        ),
        (["params", "--preset", "llama-2-7b", "--ep", "2000"], "error: --ep 2000: must be an integer in [1, 1,024]\n"),
        (
            ["params", "--preset", "llama-2-7b", "--weights", "int4", "--quantize", "experts"],
            "error: --quantize experts: matches no tensor of llama-2-7b: nothing would be stored as int4-g128-bf16; "
            "choose one of ffn, linears, all\n",
        ),
        (
            ["trace", "--module", "docs/examples/my_ffn.py:TransformerFFN(64, 128)", "--depth", "0"],
            "error: --depth 0: must be an integer in [1, 16]\n",
        ),
    ],
)
def test_splits_scopes_and_depths_that_do_nothing_are_refused(
    runner: CliRunner, args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --tp 3 sized a llama-2-7b whose heads and d_ff do not split; --quantize experts on a dense
    # model quantized nothing; --depth 0 was taken as 1.
    monkeypatch.chdir(ROOT)
    assert _usage_error(runner, args) == said


def test_a_split_that_divides_everything_still_sizes_the_gpus(runner: CliRunner) -> None:
    # 64 heads over 16 GPUs, and 8 KV heads each held by 2 of them: their projections twice over.
    data = json.loads(runner.invoke(app, ["params", "--preset", "llama-2-70b", "--tp", "16", "--json"]).stdout)
    per_gpu = data["per_gpu_memory"]
    held = 16 * (per_gpu["split_bytes"] + per_gpu["copied_kv_projection_bytes"]) + per_gpu["replicated_bytes"]
    assert per_gpu["gpus"] == 16 and held >= per_gpu["checkpoint_bytes"], per_gpu
    assert per_gpu["copied_kv_projection_bytes"] == 80 * 2 * 128 * 8192 * 2  # one KV head's k_proj and v_proj a layer


# --- errors that named another option than the one typed -------------------------------------------


def test_dtype_float64_with_costs_names_dtype(runner: CliRunner) -> None:
    said = "error: --dtype float64: no checkpoint format stores float64 weights; "
    said += "for --gpu, --tp, --ep or --weights choose float32, bfloat16, float16 or float8\n"
    for extra in (["--gpu", "h100"], ["--tp", "2"], ["--weights", "int4"]):
        assert _usage_error(runner, ["params", "--preset", "llama-2-7b", "--dtype", "float64", *extra]) == said


def test_a_width_no_one_gave_is_not_shown_as_none(runner: CliRunner, tmp_path: Path) -> None:
    module = tmp_path / "doubler.py"
    module.write_text("from torch import nn\nclass Doubler(nn.Module):\n    def forward(self, x):\n        return 2 * x\n")
    said = _usage_error(runner, ["trace", "--module", f"{module}:Doubler"])
    assert said == "error: --d-model: could not be read from the module (no linear layer or weight matrix): give --d-model\n"


def _hub_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, object]) -> None:
    commit = "0" * 40
    repo = tmp_path / "hub" / "models--org--x"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


_HUB_CONFIGS = [
    ({"hidden_size": 64}, "error: --model org/x: has no 'model_type'; supported: llama,"),
    ({**TINY_LLAMA, "hidden_size": True}, "error: model org/x: key hidden_size = True: must be an integer in [1, 16,777,216]\n"),
]
_HUB_STORAGE = (
    {**TINY_LLAMA, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": 5}},
    f"error: model org/x: key quantization_config.modules_to_not_convert = 5: {NOT_A_LIST}\n",
)


@pytest.mark.parametrize(
    ("command", "config", "said"),
    [*((["params"], c, s) for c, s in [*_HUB_CONFIGS, _HUB_STORAGE]), *((["trace", "--device", "meta"], c, s) for c, s in _HUB_CONFIGS)],
)
def test_a_hub_models_config_is_named_as_the_model(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], config: dict[str, object], said: str
) -> None:
    # Said `--config org/x`, or named no source at all.
    _hub_model(tmp_path, monkeypatch, config)
    assert _usage_error(runner, [*command, "--model", "org/x"]).startswith(said)


def test_a_hub_model_that_needs_remote_code_is_named_as_the_model(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Said `--config org/x: this config needs trust_remote_code`.
    pytest.importorskip("transformers")
    _hub_model(tmp_path, monkeypatch, json.loads((ROOT / "docs" / "examples" / "internlm2-7b" / "config.json").read_text()))
    said = _usage_error(runner, ["params", "--model", "org/x"])
    assert said == "error: --model org/x: this config needs trust_remote_code; ffn never runs a model's own code\n"


_WITHOUT_TRANSFORMERS = """
import sys
sys.modules["transformers"] = None  # as if it were not installed
from ffn_cli.cli import main
sys.argv = ["ffn", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", [["params"], ["trace", "--device", "meta"]])
def test_without_transformers_a_model_no_reader_knows_names_the_extra(command: list[str]) -> None:
    # ffn trace reached the catch-all: "ModuleNotFoundError: No module named 'transformers'".
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [*command, "--config", "docs/examples/jamba-v0.1"]
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TRANSFORMERS, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.startswith("error: docs/examples/jamba-v0.1: key model_type = 'jamba': ffn reads llama, "), done.stderr
    assert done.stderr.endswith('; any architecture transformers knows needs transformers: pip install "ffn-cli[transformers]"\n')
    assert done.stderr.count("\n") == 1 and CATCH_ALL not in done.stderr


# --- comma lists: at most 64 items; a long value is echoed by its two ends --------------------

ITEMS_65 = ",".join(str(n) for n in range(1, 66))


@pytest.mark.parametrize(
    "args",
    [
        ["params", "--variant", ",".join(["relu"] * 65)],
        ["params", "--gpu", "h100", "--preset", "gpt2", "--batch", ITEMS_65],
        ["params", "--gpu", "h100", "--preset", "gpt2", "--seq-len", ITEMS_65],
        ["params", "--preset", ",".join(["gpt2"] * 65)],
        ["bench", "--seq-len", ITEMS_65],
        ["bench", "--d-model", ITEMS_65],
        ["bench", "--dtype", ",".join(["float32"] * 65)],
        ["bench", "--impl", ",".join(["eager"] * 65)],
    ],
)
def test_a_comma_list_takes_at_most_64_items(runner: CliRunner, args: list[str]) -> None:
    # 20,000 batch sizes ran for 41 s and printed 6 MB; repeated items count, as typed.
    said = _usage_error(runner, args, f"error: {args[-2]} ")
    assert said.endswith(": a comma list takes at most 64 items; this one has 65\n")


def test_a_comma_list_of_64_items_is_read() -> None:
    from ffn_cli.requests.lists import parse_int_list

    assert parse_int_list("seq_len", ",".join(str(n) for n in range(1, 65))) == list(range(1, 65))


@pytest.mark.parametrize(
    ("args", "typed"),
    [
        (["bench", "--seq-len"], ",".join(["x"] * 5000)),
        (["trace", "--variant"], "x" * 20_000),
        (["params", "--dtype"], "y" * 5000),
    ],
    ids=["seq-len", "variant", "dtype"],
)
def test_a_long_value_is_echoed_by_its_ends(runner: CliRunner, args: list[str], typed: str) -> None:
    said = _usage_error(runner, [*args, typed], f"error: {args[-1]} ")
    # Its first 106 and last 54 characters: 160 of them shown, the rest counted.
    left_out = f"{len(typed) - 160:,}"
    assert f" {typed[:106]}…({left_out} characters left out)…{typed[-54:]}: " in said
    assert len(said.rstrip("\n")) <= 300, said


def test_the_api_error_echoes_a_long_value_by_its_ends() -> None:
    import ffn_cli

    with pytest.raises(ffn_cli.FFNError) as caught:
        ffn_cli.params(ffn_cli.FFNSpec("relu", 16), dtype="z" * 5000)
    assert len(str(caught.value)) <= 300 and "(4,842 characters left out)" in str(caught.value)  # repr: 5,002 characters
