"""A hybrid's mixer layers beyond their projections: the convolution and the state update per
token (chunked over a sequence, recurrent for one decoded token) against FlopCounterMode on
transformers' own modules at several lengths on the CPU, what FlopCounterMode cannot see counted
by hand from the ops the module ran; and the state decoding keeps, against the tensors of
transformers' own cache after a short forward."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.configs.source import preset_model
from ffn_cli.configs.windows import attention_chunks, attention_windows
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.models.mixers import DeltaRuleScan, SSDScan
from ffn_cli.models.seq_flops import flops_over_length, model_stack
from tests.model_configs import CASES, small_config

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402  (the recorder's base, as ffn_cli.trace uses it)

SEQ_LENS = [5, 8, 64, 70, 130]


def _cases(model_type: str) -> list[dict[str, Any]]:
    return [keys for t, keys in CASES if t == model_type]


class _Solves(TorchDispatchMode):
    """Records the triangular solves a module runs: FlopCounterMode has no count for them."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func.overloadpacket is torch.ops.aten.linalg_solve_triangular:
            self.shapes.append((tuple(args[0].shape), tuple(args[1].shape)))
        return func(*args, **(kwargs or {}))


def _counts(module: Any, *args: Any, **kwargs: Any) -> tuple[dict[str, int], list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    from torch.utils.flop_counter import FlopCounterMode

    # Frozen: transformers >= 5.25 runs its mixers' hub-kernel layers as modules, and
    # FlopCounterMode's module tracker fails on a parameter passed to one that requires grad.
    module.requires_grad_(False)
    solves = _Solves()
    with torch.no_grad(), FlopCounterMode(display=False) as counter, solves:
        module(*args, **kwargs)
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}, solves.shapes


def _forward_substitution(shapes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> int:
    """FLOPs of solving unit lower-triangular systems row by row: row i of an n × n system takes
    i multiply-adds per right-hand column."""
    total = 0
    for a, b in shapes:
        n, columns = a[-1], b[-1]
        systems = 1
        for size in b[:-2]:
            systems *= size
        total += systems * columns * 2 * sum(range(n))
    return total


@pytest.mark.parametrize("case", range(len(_cases("qwen3_next"))))
@pytest.mark.parametrize("seq_len", SEQ_LENS)
def test_gated_delta_net_chunked_against_flop_counter(case: int, seq_len: int) -> None:
    from transformers.models.qwen3_next import modeling_qwen3_next as qn

    config_dict = small_config("qwen3_next", _cases("qwen3_next")[case])
    config = transformers.AutoConfig.for_model(**config_dict)
    spec = model_spec_from_config(config_dict)
    mixer = spec.mixer
    assert mixer is not None and isinstance(mixer.scan, DeltaRuleScan)
    batch = 2
    torch.manual_seed(0)
    module = qn.Qwen3NextGatedDeltaNet(config, layer_idx=mixer.layers[0])
    counts, solves = _counts(module, torch.randn(batch, seq_len, config.hidden_size))
    # The chunked rule's matmuls (bmm) and its two triangular solves a chunk, against the count.
    assert len(solves) == 2
    scan = counts["aten.bmm"] + _forward_substitution(solves)
    assert scan == mixer.scan.flops(seq_len) * batch * seq_len
    # The conv: the reference pads kernel - 1 on both sides and drops the positions past the
    # end, so it computes seq_len + kernel - 1 outputs where a causal kernel computes seq_len.
    kernel = config.linear_conv_kernel_dim
    assert counts["aten.convolution"] == mixer.conv_flops * batch * (seq_len + kernel - 1)
    assert counts["aten.mm"] == mixer.projection_flops * batch * seq_len


@pytest.mark.parametrize(("model_type", "case"), [("granitemoehybrid", 0), ("granitemoehybrid", 1), ("nemotron_h", 0), ("nemotron_h", 2)])
@pytest.mark.parametrize("seq_len", SEQ_LENS)
def test_mamba2_chunked_scan_against_flop_counter(model_type: str, case: int, seq_len: int) -> None:
    import importlib

    module_of = {"granitemoehybrid": "GraniteMoeHybridMambaLayer", "nemotron_h": "NemotronHMamba2Mixer"}
    lib = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    config_dict = small_config(model_type, _cases(model_type)[case])
    config = transformers.AutoConfig.for_model(**config_dict)
    spec = model_spec_from_config(config_dict)
    mixer = spec.mixer
    assert mixer is not None and isinstance(mixer.scan, SSDScan)
    batch = 2
    torch.manual_seed(0)
    module = getattr(lib, module_of[model_type])(config, layer_idx=mixer.layers[0])
    counts, _ = _counts(module, torch.randn(batch, seq_len, config.hidden_size))
    # transformers' reference scan, einsum by einsum, over c chunks of q (the last one padded):
    # per chunk and head C·Bᵀ (q × n by n × q), those scores times x (q × q by q × p), the
    # chunk's state Bᵀ·x and the read of the previous state C·h (q × n by n × p each); and the
    # states passed between chunks as one einsum over every pair of the c + 1 chunk boundaries.
    heads, p, n, groups = module.num_heads, module.head_dim, module.ssm_state_size, module.n_groups
    q = module.chunk_size
    c = -(-seq_len // q)
    per_chunk = heads * (2 * q * n * q + 2 * q * q * p + 2 * n * q * p + 2 * q * n * p)
    all_pairs = heads * 2 * (c + 1) * (c + 1) * p * n
    assert counts["aten.bmm"] == batch * (c * per_chunk + all_pairs)
    # The kernels (mamba_ssm) form C·Bᵀ once per group, not per head, and pass the states from
    # chunk to chunk by a decay and an add: the count is the reference's less those two.
    per_head_scores = c * (heads - groups) * 2 * q * n * q
    assert mixer.scan.flops(seq_len) * batch * seq_len == counts["aten.bmm"] - batch * (all_pairs + per_head_scores)
    assert counts["aten.convolution"] == mixer.conv_flops * batch * (seq_len + module.conv_kernel_size - 1)


def _decode_counts(config_dict: dict[str, Any], context: int) -> tuple[Any, dict[str, dict[str, int]]]:
    """A small model on the CPU: a prefill of `context` tokens with a cache, then one token
    under FlopCounterMode, counted module by module."""
    from torch.utils.flop_counter import FlopCounterMode

    config = transformers.AutoConfig.for_model(**config_dict)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval().requires_grad_(False)  # see _counts
    with torch.no_grad():
        cache = model(torch.randint(0, 100, (2, context)), use_cache=True).past_key_values
        with FlopCounterMode(display=False) as counter:
            model(torch.randint(0, 100, (2, 1)), cache=cache, use_cache=True)
    counts = {name: {str(op): n for op, n in ops.items()} for name, ops in counter.get_flop_counts().items()}
    return model, counts


@pytest.mark.parametrize("context", [3, 9, 40])
def test_gated_delta_net_decodes_in_its_recurrent_form(context: int) -> None:
    config = small_config("qwen3_next", _cases("qwen3_next")[0])
    mixer = model_spec_from_config(config).mixer
    assert mixer is not None and isinstance(mixer.scan, DeltaRuleScan)
    model, counts = _decode_counts(config, context)
    layer = mixer.layers[0]
    (name,) = [n for n in counts if n.endswith(f"layers.{layer}.linear_attn")]
    ops = counts[name]
    # One token: the projections, the conv over the kernel - 1 cached inputs and the new one
    # (the reference caches the kernel's width, so it computes two outputs and keeps the last),
    # and no matmul for the recurrent rule: it runs elementwise, so it is counted by hand from
    # its listing, per value head: the state read by the key ((S·k).sum: dk·dv multiply-adds),
    # its rank-one update (S + k ⊗ δ: dk·dv multiplies and as many adds), the read by the query.
    assert set(ops) == {"aten.mm", "aten.convolution"}
    assert ops["aten.mm"] == 2 * mixer.projection_flops
    assert ops["aten.convolution"] == 2 * 2 * mixer.conv_flops
    attn = model.model.layers[layer].linear_attn
    heads, dk, dv = attn.num_v_heads, attn.head_k_dim, attn.head_v_dim
    by_hand = heads * (2 * dk * dv + 2 * dk * dv + 2 * dk * dv)
    assert mixer.decode_flops() == mixer.conv_flops + by_hand


@pytest.mark.parametrize(("model_type", "case"), [("granitemoehybrid", 0), ("nemotron_h", 0)])
@pytest.mark.parametrize("context", [3, 9, 40])
def test_mamba2_decodes_in_its_recurrent_form(model_type: str, case: int, context: int) -> None:
    config = small_config(model_type, _cases(model_type)[case])
    mixer = model_spec_from_config(config).mixer
    assert mixer is not None and isinstance(mixer.scan, SSDScan)
    model, counts = _decode_counts(config, context)
    layer = mixer.layers[0]
    (name,) = [n for n in counts if n.endswith(f"layers.{layer}.mamba") or n.endswith(f"layers.{layer}.mixer")]
    ops = counts[name]
    # The state's read by C is a bmm (p × n by n × 1 per head); its update by dt·B ⊗ x is
    # elementwise: p·n products per head, added to the decayed state (p·n adds).
    mamba = model.model.layers[layer].mamba if model_type == "granitemoehybrid" else model.model.layers[layer].mixer
    heads, p, n = mamba.num_heads, mamba.head_dim, mamba.ssm_state_size
    assert ops["aten.bmm"] == 2 * heads * 2 * p * n
    update = heads * (p * n + p * n)
    assert 2 * (mixer.decode_flops() - mixer.conv_flops) == ops["aten.bmm"] + 2 * update
    assert ops["aten.convolution"] == 2 * 2 * mixer.conv_flops  # two outputs, the last kept (as above)


def test_short_conv_costs_its_conv_alone() -> None:
    spec = preset_model("lfm2-1.2b")
    mixer = spec.mixer
    assert mixer is not None and mixer.scan is None
    # 10 conv layers of 2,048 channels × 3 taps, 2 FLOPs a tap, at any length.
    stack = model_stack(spec, (None,) * spec.n_layers, causal=True)
    for row in flops_over_length(stack, [1, 4096, 131072]):
        assert row.mixer == 10 * 2 * 2048 * 3


def test_qwen3_next_rows_and_crossover() -> None:
    data = json.loads(CliRunner().invoke(app, ["params", "--preset", "qwen3-next-80b-a3b", "--seq-len", "63,64,4096", "--json"]).stdout)
    flops = data["flops_over_seq_len"]
    assert flops["mixer_chunk"] == 64
    rows = {r["seq_len"]: r for r in flops["rows"]}
    # A padded chunk: 63 tokens cost one chunk as 64 do; the conv (36 layers of 2·16·128 +
    # 32·128 channels × 4 taps) costs the same per token.
    conv = 36 * 2 * (2 * 16 * 128 + 32 * 128) * 4
    assert (rows[63]["mixer_state_flops"] - conv) * 63 == pytest.approx((rows[64]["mixer_state_flops"] - conv) * 64, rel=1e-12)
    for r in rows.values():
        mixing = r["attention_projection_flops"] + r["attention_score_flops"] + r["mixer_state_flops"]
        assert r["ffn_share"] == pytest.approx(r["ffn_flops"] / (r["ffn_flops"] + mixing), rel=1e-12)
    spec = preset_model("qwen3-next-80b-a3b")
    stack = model_stack(spec, (None,) * spec.n_layers, causal=True)
    crossover = flops["crossover_seq_len"]
    assert crossover == stack.crossover()
    assert stack.attention_flops(crossover, padded=False) >= stack.ffn_flops > stack.attention_flops(crossover - 1, padded=False)
    text = " ".join(CliRunner().invoke(app, ["params", "--preset", "qwen3-next-80b-a3b", "--seq-len", "4096"]).output.split())
    assert "the delta rule in chunks of 64" in text and "left out)" not in text


# --- what decoding keeps ----------------------------------------------------------------------


def _cache_after(config_dict: dict[str, Any], context: int) -> tuple[Any, Any]:
    config = transformers.AutoConfig.for_model(**config_dict)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval().requires_grad_(False)  # see _counts
    with torch.no_grad():
        cache = model(torch.randint(0, 100, (2, context)), use_cache=True).past_key_values
    return model, cache


@pytest.mark.parametrize(("model_type", "case"), [("qwen3_next", 0), ("granitemoehybrid", 0), ("lfm2", 1), ("nemotron_h", 0)])
@pytest.mark.parametrize("context", [2, 7, 30])
def test_decode_state_against_transformers_cache(model_type: str, case: int, context: int) -> None:
    config = small_config(model_type, _cases(model_type)[case])
    spec = model_spec_from_config(config)
    windows, chunks = attention_windows(config, spec.n_layers), attention_chunks(config, spec.n_layers)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, windows, chunks, context)}
    mixer = spec.mixer
    assert mixer is not None
    _, cache = _cache_after(config, context)
    batch = 2
    for i in spec.attention_layers:
        layer = cache.layers[i]
        assert (layer.keys.numel() + layer.values.numel()) // batch == kinds["attention"].elements_per_layer
    for i in mixer.layers:
        conv = cache.get_conv_state(i, state_idx=0)
        # The reference keeps the kernel's width of inputs, the newest included: one column
        # more than the kernel - 1 a step needs.
        assert conv.numel() // batch - conv.shape[1] == mixer.conv_state_elements
        recurrent = cache.get_recurrent_state(i, state_idx=0) if mixer.scan is not None else None
        assert (recurrent.numel() // batch if recurrent is not None else 0) == mixer.recurrent_state_elements
    assert kinds[mixer.kind].layers == len(mixer.layers) and kinds["attention"].layers == len(spec.attention_layers)


@pytest.mark.parametrize("context", [2, 4, 9])
def test_sliding_window_cache_stops_at_its_window(context: int) -> None:
    config = small_config("gemma3_text", {"head_dim": 32, "sliding_window": 4, "num_hidden_layers": 6})
    spec = model_spec_from_config(config)
    windows = attention_windows(config, spec.n_layers)
    kinds = {str.__str__(k.kind): k for k in decode_state(spec, windows, (), context)}
    _, cache = _cache_after(config, context)
    for i, window in enumerate(windows):
        layer = cache.layers[i]
        held = (layer.keys.numel() + layer.values.numel()) // 2
        kind = f"attention, sliding {window}" if window else "attention"
        assert held == kinds[kind].elements_per_layer
    assert kinds["attention, sliding 4"].tokens == min(context, 3)


def test_decode_state_in_params() -> None:
    args = ["params", "--preset", "qwen3-next-80b-a3b", "--gpu", "h100", "--phase", "decode", "--seq-len", "4096", "--batch", "1,8"]
    data = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)["decode_state"]
    kinds = {k["kind"]: k for k in data["kinds"]}
    # By hand: 12 attention layers of 2 KV heads × 256, K and V, 4,096 tokens, 2 bytes; 36
    # DeltaNet layers of 32 value heads × 128 × 128 and the conv's 3 latest of 2·16·128 + 32·128.
    assert kinds["attention"]["bytes"] == 12 * 4096 * 2 * 2 * 256 * 2
    assert kinds["Gated DeltaNet"]["bytes"] == 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * 2
    assert data["bytes_by_batch"]["8"] == 8 * data["bytes_per_sequence"] == 8 * sum(k["bytes"] for k in data["kinds"])
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert "what decoding keeps per sequence at context 4,096" in result.output


@pytest.mark.parametrize("preset", ["qwen3-next-80b-a3b", "granite-4.0-h-tiny", "lfm2-1.2b"])
def test_prefill_roofline_counts_what_the_rows_count(preset: str) -> None:
    # One sequence of 4,096 tokens in one pass: the roofline's FLOPs are the seq-len row's,
    # mixers included, times the tokens, and the LM head (its matmul over the vocabulary) once, for
    # the last token's logits, the one row a server samples the next token from.
    args = ["params", "--preset", preset, "--seq-len", "4096", "--json"]
    row = json.loads(CliRunner().invoke(app, args).stdout)["flops_over_seq_len"]["rows"][0]
    roofline = json.loads(CliRunner().invoke(app, [*args, "--gpu", "h100"]).stdout)["roofline"]["cases"][0]["model"]
    spec = preset_model(preset)
    per_token = row["ffn_flops"] + row["attention_projection_flops"] + row["attention_score_flops"] + row["mixer_state_flops"]
    assert row["mixer_state_flops"] > 0
    assert roofline["flops"] == pytest.approx(4096 * per_token + 2 * spec.d_model * spec.vocab_size, rel=1e-12)
