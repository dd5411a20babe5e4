"""A model's layout read from one built decoder layer of each kind (ffn_cli/configs/layer_read/),
checked by second paths: the whole model built on meta (its parameters() total), the reader of
the same model_type (the same counts and the same deployment answer), transformers' own cache
after a real forward (what decoding keeps), and hand counts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ffn_cli.cli import app
from ffn_cli.compressed_attention import CompressedAttentionSpec
from ffn_cli.configs.families import model_spec_from_config
from ffn_cli.configs.families.common import Unreadable
from ffn_cli.configs.source import LoadedModel
from ffn_cli.costs.decode_state import decode_state
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.models.count import count_model
from ffn_cli.render.presenters.costs import costs_data
from ffn_cli.services.costs import CostOptions, model_costs
from tests.model_configs import CASES, small_config
from tests.module_flops import module_flops

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from ffn_cli.configs import meta_build  # noqa: E402  (torch and transformers)
from ffn_cli.configs.layer_read import layer_kinds, read_layout  # noqa: E402


def _layout(config: dict[str, Any]) -> Any:
    return read_layout(config, name="small", source="small")


def _case_id(case: tuple[str, dict[str, Any]]) -> str:
    return case[0] + "-" + "-".join(sorted(case[1]))[:40]


# --- totals: against the whole model built on meta, and the reader ------------------------------


@pytest.mark.parametrize(("model_type", "keys"), CASES, ids=[_case_id(c) for c in CASES])
def test_layout_counts_the_whole_build_or_is_refused(model_type: str, keys: dict[str, Any]) -> None:
    config = small_config(model_type, keys)
    try:
        layout = _layout(config)
    except (FFNError, FFNRuntimeError) as refused:  # refused by name: the layers and the module it cannot size
        assert "small" in str(refused) or model_type in str(refused)
        return
    built = meta_build.count(config, name="small", source="small")
    counted = count_model(layout.spec)
    if layout.left_out and any("not counted" in x for x in layout.left_out):
        assert counted.total_params < built.total_params
        return
    assert counted.total_params == built.total_params
    try:
        reader = count_model(model_spec_from_config(config))
    except (FFNError, Unreadable):
        return
    if reader.total_params == built.total_params:  # the reader counts what transformers builds (not a tower it adds)
        assert (counted.total_params, counted.active_params) == (reader.total_params, reader.active_params)


@pytest.mark.parametrize(
    "model_type", ["qwen3_5", "qwen3_5_moe", "glm_moe_dsa", "deepseek_v32", "kimi_linear", "gemma3", "phi", "aria", "moshi", "kosmos-2.5"]
)
def test_default_configs_count_the_whole_build(model_type: str) -> None:
    # transformers' own default configs of the newest model_types, at their real sizes. Aria's
    # config holds a dict keyed by numbers (projector_patch_to_query_dict); Moshi's layer class asks
    # beside the config which kind it is, so its layers are read as the model built them.
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params


_REFUSED = {
    "xlm": "names no decoder layer class",
    "blt": "names no hidden_size",
    # NeoMME's encoder layers attend both ways, their o_proj inside an output gate: never read as a decoder's attention
    "neomme": "no q, k, v and o projections",
}


_READ = ["doge", "mamba2", "falcon_mamba", "jamba", "olmo_hybrid", "recurrent_gemma", "zamba2", "inkling2_loop_text", "hrm_text", "cpmant"]


@pytest.mark.parametrize("model_type", [*_READ, *_REFUSED])
def test_no_silent_miscount(model_type: str) -> None:
    # Families whose layers hold tensors of their own (Doge's residual scales), are blocks of
    # another name (Mamba-2), come from two classes (Jamba, OLMo-Hybrid; Zamba2's, which tie blocks across layers), run in cycles
    # of two stacks (HRM) or several passes a token (Inkling 2 Loop's), each run laid out as a layer of its own, alternate by a
    # cycled pattern (RecurrentGemma), run soft-prompt tokens before the text (CPM-Ant), are lists side by side (XLM) or lack
    # the text sizes (BLT):
    # counted exactly, or refused by name, never counted as something else.
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    if model_type in _REFUSED:
        # A config without the text sizes is bad input (exit 2); a layout ffn does not size is a limit of the tool (exit 1).
        with pytest.raises(FFNError if model_type == "blt" else FFNRuntimeError, match=re.escape(_REFUSED[model_type])):
            _layout(config)
        return
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    if model_type in ("falcon_mamba", "recurrent_gemma"):  # Mamba-1, the RG-LRU: tensors as built, state sized
        assert layout.spec.mixer is not None and layout.spec.mixer.state_sized and not layout.left_out


def test_one_layer_of_each_kind_is_built() -> None:
    # Qwen3-Next: Gated DeltaNet in three of every four layers, attention in the fourth; MoE in every
    # layer. The config tells at most a handful of kinds apart, each built once.
    text = transformers.AutoConfig.for_model("qwen3_next")
    kinds = layer_kinds(text, text.num_hidden_layers)
    assert sum(len(k) for k in kinds) == 48 and len(kinds) <= 4
    layout = _layout({**text.to_dict(), "model_type": "qwen3_next"})
    assert layout.spec.mixer is not None and layout.spec.mixer.layers == tuple(i for i in range(48) if (i + 1) % 4)


# --- the deployment answer: the reader's and the layout's, equal ------------------------------------


_ASKED = [
    CostOptions(gpu="h200", phase="decode", batch=(1, 8), seq_len=(4096,)),
    CostOptions(gpu="h100", phase="prefill", batch=(2,), seq_len=(2048,), tp=2),
    CostOptions(gpu="h200", phase="decode", batch=(16,), seq_len=(32768,), tp=2, ep=2),
    CostOptions(weights="fp8", gpu="h200", phase="decode", batch=(4,), seq_len=(1000,)),
]


# GPT-2's projections are transformers' Conv1D, read as the Linears of their shape; GraniteMoeShared's experts a
# GraniteMoeSharedExperts ("Shared" the family's name).
@pytest.mark.parametrize(
    "model_type", ["llama", "qwen3_next", "deepseek_v3", "granitemoehybrid", "granitemoeshared", "gpt_oss", "gemma3_text", "gpt2"]
)
@pytest.mark.parametrize("asked", range(len(_ASKED)))
def test_layout_and_reader_give_the_same_answer(model_type: str, asked: int) -> None:
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    opts = _ASKED[asked]
    if opts.ep != 1 and model_type in ("llama", "gemma3_text", "gpt2"):
        opts = CostOptions(**{**vars(opts), "ep": 1})
    reader = LoadedModel(model_spec_from_config(config, name="m", source="m"), config, "m")
    layout = read_layout(config, name="m", source="m")
    assert layout.windows == reader.windows
    by_reader = costs_data(model_costs(reader, "bfloat16", opts))
    by_layout = costs_data(model_costs(layout, "bfloat16", opts))
    assert {"per_gpu_memory", "roofline"} <= set(by_reader)
    assert json.dumps(by_layout, sort_keys=True, default=str) == json.dumps(by_reader, sort_keys=True, default=str)


# --- what decoding keeps: against transformers' cache after a forward, and by hand ----------------


def _cache_after(config: dict[str, Any], context: int) -> Any:
    hf = transformers.AutoConfig.for_model(**config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf).eval().requires_grad_(False)
    with torch.no_grad():
        return model(torch.randint(0, 100, (2, context)), use_cache=True).past_key_values


def _kinds(layout: Any, context: int) -> dict[str, Any]:
    return {str.__str__(k.kind): k for k in decode_state(layout.spec, layout.windows, layout.chunks, context)}


def _held_state_is(cache: Any, mixer: Any) -> None:
    """transformers' cache holds each mixer layer's recurrent state, and its conv's kernel width of
    inputs, the newest included: one more than decoding needs."""
    for i in mixer.layers:
        conv = cache.get_conv_state(i, state_idx=0)
        assert conv.numel() // 2 - conv.shape[1] == mixer.conv_state_elements
        assert cache.get_recurrent_state(i, state_idx=0).numel() // 2 == mixer.recurrent_state_elements


@pytest.mark.parametrize("context", [2, 9])
def test_gqa_cache_against_transformers(context: int) -> None:
    config = small_config("llama", {"num_key_value_heads": 2, "head_dim": 24})
    layout = _layout(config)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]
    # By hand: 2 KV heads × 24, K and V, each cached token.
    assert held == [context * 2 * 2 * 24] * 3 == [_kinds(layout, context)["attention"].elements_per_layer] * 3


@pytest.mark.parametrize("context", [2, 4, 9])
def test_sliding_window_cache_against_transformers(context: int) -> None:
    # Gemma 3: five sliding layers to one full; a window of 4 keeps its 3 latest tokens.
    config = small_config("gemma3_text", {"head_dim": 32, "sliding_window": 4, "num_hidden_layers": 6})
    layout = _layout(config)
    assert layout.windows == (4, 4, 4, 4, 4, None)
    kinds = _kinds(layout, context)
    cache = _cache_after(config, context)
    for i, window in enumerate(layout.windows):
        layer = cache.layers[i]
        kind = kinds[f"attention, sliding {window}" if window else "attention"]
        assert (layer.keys.numel() + layer.values.numel()) // 2 == kind.elements_per_layer
    assert kinds["attention, sliding 4"].tokens == min(context, 3)


@pytest.mark.parametrize("context", [3, 30])
def test_latent_attention_caches_its_latent(context: int) -> None:
    config = small_config("deepseek_v3", {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 12, "v_head_dim": 10,
                                          "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24,
                                          "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1})  # fmt: skip
    layout = _layout(config)
    # By hand: MLA keeps the compressed KV (kv_lora_rank) and the shared rotary key (qk_rope_head_dim)
    # per token, whatever the heads (transformers' eager cache holds the decompressed K and V instead).
    assert _kinds(layout, context)["attention"].elements_per_layer == context * (16 + 8)


@pytest.mark.parametrize(("model_type", "keys"), [(t, k) for t, k in CASES if t in ("qwen3_next", "granitemoehybrid")][:3])
@pytest.mark.parametrize("context", [2, 30])
def test_hybrid_state_against_transformers(model_type: str, keys: dict[str, Any], context: int) -> None:
    config = small_config(model_type, keys)
    layout = _layout(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.state_sized
    kinds = _kinds(layout, context)
    cache = _cache_after(config, context)
    for i in layout.spec.attention_layers:
        layer = cache.layers[i]
        assert (layer.keys.numel() + layer.values.numel()) // 2 == kinds["attention"].elements_per_layer
    for i in mixer.layers:
        conv = cache.get_conv_state(i, state_idx=0)
        # transformers keeps the kernel's width of inputs, the newest included: one more than decoding needs.
        assert conv.numel() // 2 - conv.shape[1] == mixer.conv_state_elements
        assert cache.get_recurrent_state(i, state_idx=0).numel() // 2 == mixer.recurrent_state_elements
    assert kinds[mixer.kind].layers == len(mixer.layers)


_NEMOTRON_H = next(keys for t, keys in CASES if t == "nemotron_h")


@pytest.mark.parametrize(("dtype", "element_bytes"), [("float32", 4), ("float16", 2), ("auto", 2), (None, 2)])
def test_a_state_dtype_the_file_names_is_honoured(dtype: str | None, element_bytes: int) -> None:
    # mamba_ssm_cache_dtype, as the Nemotron-H reader reads it: the recurrent state at its own dtype, the
    # conv window at the cache dtype (2 bytes here); a file that names none (the class defaults to float32) is cached as the rest.
    config = small_config("nemotron_h", {**_NEMOTRON_H, "mamba_ssm_cache_dtype": dtype})
    layout = _layout(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.state_dtype_bytes == (None if dtype in ("auto", None) else element_bytes)
    # By hand: 8 heads × 16 × a state of 16; conv over 8 × 16 + 2 × 2 groups × 16 channels, kernel 4 less one.
    state, conv = 8 * 16 * 16, (8 * 16 + 2 * 2 * 16) * 3
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (state, conv)
    (row,) = [k for k in decode_state(layout.spec, layout.windows, layout.chunks, 64) if k.kind == "Mamba-2"]
    assert row.bytes_per_layer(2) == state * element_bytes + conv * 2
    reader = model_spec_from_config(config)  # the reader's answer, the same
    (by_reader,) = [k for k in decode_state(reader, layout.windows, layout.chunks, 64) if k.kind == "Mamba-2"]
    assert by_reader.bytes_(2) == row.bytes_(2)


def test_a_state_dtype_of_no_known_name_is_refused() -> None:
    config = small_config("nemotron_h", {**_NEMOTRON_H, "mamba_ssm_cache_dtype": "float64"})
    with pytest.raises(FFNError, match=r"mamba_ssm_cache_dtype.*float32, bfloat16, float16 or auto"):
        _layout(config)


def test_qwen3_5s_gated_deltanet_state_at_the_dtype_its_config_names() -> None:
    # Qwen3.5's config.json says mamba_ssm_dtype: float32, the dtype its Gated DeltaNet state is
    # kept in. By hand: 4 value heads × a 8 × 8 state, at 4 B; the conv window at the cache dtype.
    keys = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                vocab_size=128, head_dim=16, layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_key_heads=2,
                linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, mamba_ssm_dtype="float32")  # fmt: skip
    config = {**transformers.AutoConfig.for_model("qwen3_5_text", **keys).to_dict(), "model_type": "qwen3_5_text"}
    mixer = _layout(config).spec.mixer
    assert mixer is not None and mixer.kind == "Gated DeltaNet" and mixer.state_dtype_bytes == 4
    assert mixer.recurrent_state_elements == 4 * 8 * 8
    assert _layout({**config, "mamba_ssm_dtype": None}).spec.mixer.state_dtype_bytes is None  # type: ignore[union-attr]


_OLMO_HYBRID = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                    vocab_size=128, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                    layer_types=["linear_attention"] * 3 + ["full_attention"], linear_num_key_heads=2, linear_num_value_heads=4,
                    linear_key_head_dim=8, linear_value_head_dim=8)  # fmt: skip


@pytest.mark.parametrize("context", [2, 30])
def test_layers_of_two_classes_against_transformers(context: int) -> None:
    # OLMo-Hybrid builds its Gated DeltaNet layers and its attention layers from two classes: the layers
    # are read as the model builds them, each of its own class.
    config = {**transformers.AutoConfig.for_model("olmo_hybrid", **_OLMO_HYBRID).to_dict(), "model_type": "olmo_hybrid"}
    layout = _layout(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.layers == (0, 1, 2) and layout.spec.attention_layers == (3,)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    # By hand: 4 value heads × 8 × 8 of state; q, k, v convolved over 2 · 2 · 8 + 4 · 8 channels, kernel 4 less one;
    # the attention layer 2 KV heads × 16, K and V, each token.
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (4 * 8 * 8, 64 * 3)
    cache = _cache_after(config, context)
    _held_state_is(cache, mixer)
    attention = cache.layers[3]
    assert (attention.keys.numel() + attention.values.numel()) // 2 == _kinds(layout, context)["attention"].elements_per_layer
    assert _kinds(layout, context)["attention"].elements_per_layer == context * 2 * 16 * 2


_JAMBA = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
              num_experts=4, num_experts_per_tok=2, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1,
              mamba_d_state=4, mamba_expand=2, mamba_dt_rank=8, pad_token_id=0, use_mamba_kernels=False)  # fmt: skip


@pytest.mark.parametrize("context", [2, 30])
def test_mamba1_state_against_transformers(context: int) -> None:
    # Jamba: Mamba-1 layers and attention layers, two classes. Mamba-1's state is a state-size vector per
    # channel of its selective scan, beside its conv's window.
    config = {**transformers.AutoConfig.for_model("jamba", **_JAMBA).to_dict(), "model_type": "jamba"}
    layout = _layout(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.kind == "Mamba" and mixer.layers == (0, 2) and not layout.left_out
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    # By hand: 2 × 64 = 128 channels × a state of 4; the conv over the 128 channels, kernel 4 less one.
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (128 * 4, 128 * 3)
    cache = _cache_after(config, context)
    _held_state_is(cache, mixer)
    attention = cache.layers[1]
    assert (attention.keys.numel() + attention.values.numel()) // 2 == _kinds(layout, context)["attention"].elements_per_layer


def test_mamba1_flops_over_length(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "jamba", **_JAMBA)
    result = CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "128", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["flops_over_seq_len"]["rows"]
    # By hand: the scan's update and read, 2 × 2 × 128 channels × a state of 4, and the conv, 2 × 128 × 4 taps,
    # in each of the 2 Mamba layers, per token at any length.
    assert row["mixer_state_flops"] == 2 * (4 * 128 * 4 + 2 * 128 * 4)
    text = CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "128"], env={"COLUMNS": "80"}).output
    assert "the selective scan, token by token" in text and "padded" not in text


_FALCON_H1 = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                  mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4,
                  mamba_chunk_size=8, pad_token_id=0)  # fmt: skip


@pytest.mark.parametrize("context", [2, 30])
def test_attention_beside_a_mixer_against_transformers(context: int) -> None:
    # Falcon-H1: every layer runs its attention and a Mamba-2 side by side; each keeps its own state.
    config = {**transformers.AutoConfig.for_model("falcon_h1", **_FALCON_H1).to_dict(), "model_type": "falcon_h1"}
    layout = _layout(config)
    spec, mixer = layout.spec, layout.spec.mixer
    assert mixer is not None and spec.beside_attention == mixer.layers and spec.attention_layers == mixer.layers == (0, 1)
    assert count_model(spec).total_params == meta_build.count(config, name="x", source="x").total_params
    kinds = _kinds(layout, context)
    # By hand: 2 KV heads × 16, K and V, each token; 4 heads × 16 × a state of 8, and the conv over
    # 64 + 2 × 8 channels, kernel 4 less one.
    assert kinds["attention"].elements_per_layer == context * 2 * 16 * 2
    assert (mixer.recurrent_state_elements, mixer.conv_state_elements) == (4 * 16 * 8, 80 * 3)
    cache = _cache_after(config, context)
    for i in (0, 1):
        layer = cache.layers[i]
        assert (layer.keys.numel() + layer.values.numel()) // 2 == kinds["attention"].elements_per_layer
    _held_state_is(cache, mixer)


def test_attention_beside_a_mixer_in_the_deployment_answer(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "falcon_h1", **_FALCON_H1)
    args = ["params", "--config", path, "--gpu", "h200", "--tp", "2", "--phase", "decode", "--batch", "2", "--seq-len", "64", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # By hand, per GPU of 2: the attention's 1 KV head of 2 × 16, K and V, 64 tokens; half of Mamba-2's
    # state and conv window (512 + 240); 2 layers, 2 bytes, 2 sequences.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * 2 * 2 * (64 * 16 * 2 + (512 + 240) // 2)
    # The roofline's layer holds both: the attention's q, k, v, o (64 × (64 + 32 + 32) + 64 × 64) and the Mamba-2's
    # in_proj (64 → 64 + 80 + 4), conv (80 × 4 + bias), out_proj and its 3 vectors of 4, halved over --tp 2, 2 bytes.
    (case,) = data["roofline"]["cases"]
    attention, mamba = 64 * 128 + 64 * 64, 64 * 148 + 80 * 5 + 64 * 64 + 3 * 4
    assert case["attention_one_layer_mean"]["weight_bytes"] == 2 * (attention + mamba) / 2
    rows = json.loads(CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "64", "--json"]).stdout)["flops_over_seq_len"][
        "rows"
    ]
    assert rows[0]["attention_score_flops"] > 0 and rows[0]["mixer_state_flops"] > 0


_KIMI = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=4, num_experts=4, num_experts_per_token=2, kv_lora_rank=16, qk_rope_head_dim=8,
             qk_nope_head_dim=8, v_head_dim=8, vocab_size=128, linear_head_dim=8, linear_num_heads=4,
             layer_types=["linear_attention"] * 3 + ["full_attention"], mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
             pad_token_id=0, bos_token_id=1, eos_token_id=2)  # fmt: skip


@pytest.mark.parametrize("context", [2, 30])
def test_kimi_delta_attention_state_against_transformers(context: int) -> None:
    # Kimi-Linear: a delta rule of its own (no reader knows kimi_linear) beside MLA every fourth layer.
    config = {**transformers.AutoConfig.for_model("kimi_linear", **_KIMI).to_dict(), "model_type": "kimi_linear"}
    layout = _layout(config)
    mixer = layout.spec.mixer
    assert mixer is not None and mixer.state_sized and mixer.layers == (0, 1, 2)
    kinds = _kinds(layout, context)
    cache = _cache_after(config, context)
    # By hand: 4 heads × 8 × 8 of state; q, k and v convolved over 3 × 4 × 8 channels, kernel 4 less one.
    assert mixer.recurrent_state_elements == 4 * 8 * 8 and mixer.conv_state_elements == 3 * 4 * 8 * 3
    _held_state_is(cache, mixer)
    # Its MLA layer caches the latent and the rotary key, 16 + 8 a token, as transformers' cache holds them.
    latent = cache.layers[3]
    assert (latent.keys.numel() + latent.values.numel()) // 2 == kinds["attention"].elements_per_layer == context * (16 + 8)


# --- the command: a model_type no reader knows -------------------------------------------------------


def _tiny(tmp_path: Path, model_type: str, **keys: Any) -> str:
    config = {**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}
    path = tmp_path / f"{model_type}.json"
    path.write_text(json.dumps(config))
    return str(path)


_GLM5 = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2, kv_lora_rank=16, q_lora_rank=24,
             qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, index_head_dim=8, index_n_heads=2, vocab_size=128,
             first_k_dense_replace=1, max_position_embeddings=4096)  # fmt: skip


def _params_json(*args: str) -> dict[str, Any]:
    """What `ffn params ARGS --json` prints, exit status 0."""
    result = CliRunner().invoke(app, ["params", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_gpu_answer_for_a_model_no_reader_knows(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "glm_moe_dsa", **_GLM5)
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "2", "--seq-len", "100"]
    data = _params_json(*args[1:])
    # By hand: 4 layers of MLA, each token its 16-wide latent and 8-wide rotary key, and the indexer's
    # 8-wide key (index_head_dim); 2 bytes, 2 sequences.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * 100 * 4 * (16 + 8 + 8) * 2
    assert [k["elements_per_token"] for k in data["decode_state"]["kinds"]] == [16 + 8, 8]
    assert data["roofline"]["cases"]
    assert not data["per_gpu_memory"].get("left_out") and not data["layout"]["left_out"]
    assert data["total_params"] == meta_build.count(json.loads(Path(path).read_text()), name="x", source="x").total_params
    text = CliRunner().invoke(app, args, env={"COLUMNS": "80"}).output
    assert "the verdict leaves out" not in text and "DSA indexer" in text


def _decode_attention(tmp_path: Path, **keys: Any) -> dict[str, Any]:
    path = _tiny(tmp_path, "glm_moe_dsa", **{**_GLM5, **keys})
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "2", "--seq-len", "100", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    attention: dict[str, Any] = json.loads(result.stdout)["roofline"]["cases"][0]["attention_one_layer_mean"]
    return attention


def test_sparse_attention_reads_its_top_k(tmp_path: Path) -> None:
    # DeepSeek Sparse Attention decoding: the indexer reads every cached index key (101 a sequence: the
    # context and the new token), the attention only its top-k latents. By hand, 2 sequences, 2 bytes:
    # latents (16 + 8 wide) read 2 × min(101, topk), index keys (8 wide) 2 × 101, both written for the 2 new tokens.
    sparse = _decode_attention(tmp_path, index_topk=16)
    assert sparse["kv_cache_bytes"] == (2 * 16 + 2) * 24 * 2 + (2 * 101 + 2) * 8 * 2
    dense = _decode_attention(tmp_path, index_topk=2048)  # a top-k past the context: every latent read
    assert dense["kv_cache_bytes"] == (2 * 101 + 2) * (24 + 8) * 2
    # Twice the indexer's heads: its scores, 2 FLOPs a head and element of each of the 202 keys it reads, and
    # its projections for the 2 tokens, wq_b (24 → heads × 8) and weights_proj (64 → heads), 2 FLOPs a weight.
    wider = _decode_attention(tmp_path, index_topk=16, index_n_heads=4)
    assert wider["flops"] - sparse["flops"] == 202 * 2 * (4 - 2) * 8 + 2 * 2 * (24 * 8 + 64) * (4 - 2)


def test_sparse_attention_flops_over_length(tmp_path: Path) -> None:
    # Per token at 64 tokens, 4 layers. Each query i reads min(i + 1, 16) latents: 16·17/2 + 48·16 = 904 keys in
    # all; the scores, 2 FLOPs × 4 heads × (Q·K over 8 + 8, V over 8) = 192 a key. The indexer reads all 64·65/2
    # keys, 2 FLOPs × 2 heads × 8 = 32 a key.
    path = _tiny(tmp_path, "glm_moe_dsa", **{**_GLM5, "index_topk": 16})
    result = CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "64", "--json"])
    assert result.exit_code == 0, result.output
    flops = json.loads(result.stdout)["flops_over_seq_len"]
    assert flops["rows"][0]["attention_score_flops"] == 4 * (192 * 904 + 32 * 64 * 65 // 2) / 64
    assert (flops["sparse_topk"], flops["index_flops_per_key"]) == (16, [32] * 4)


@pytest.mark.parametrize(("model_type", "shared"), [("glm_moe_dsa", False), ("glm_moe_dsa", True), ("deepseek_v32", False)])
def test_indexer_keys_against_transformers(model_type: str, shared: bool) -> None:
    # DeepSeek Sparse Attention: each layer whose indexer runs caches one index_head_dim key a token
    # (cache.update_indexer); GLM-5's "shared" layers reuse an earlier layer's top-k and cache none.
    keys = {**_GLM5, "indexer_types": ["full", "shared", "full", "shared"]} if shared else _GLM5
    if model_type == "deepseek_v32":  # one expert group, as 8 experts allow
        keys = {**keys, "n_group": 1, "topk_group": 1}
    config = {**transformers.AutoConfig.for_model(model_type, **keys).to_dict(), "model_type": model_type}
    layout = _layout(config)
    assert layout.spec.index_layers == ((0, 2) if shared else (0, 1, 2, 3)) and not layout.left_out
    row = _kinds(layout, 9)["DSA indexer"]
    assert (row.layers, row.elements_per_layer) == (len(layout.spec.index_layers), 9 * 8)  # by hand: 9 tokens × 8
    cache = _cache_after(config, 9)
    held = [getattr(layer, "indexer_keys", None) for layer in cache.layers]
    assert [i for i, k in enumerate(held) if k is not None] == list(layout.spec.index_layers)
    assert all(k.numel() // 2 == row.elements_per_layer for k in held if k is not None)


_MIMO = dict(hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, head_dim=24, v_head_dim=16, vocab_size=128, n_routed_experts=4, num_experts_per_tok=2,
             layer_types=["full_attention", "sliding_attention", "full_attention"], sliding_window=4)  # fmt: skip


def _per_layer_cache(cache: Any) -> list[int]:
    """Elements transformers' cache holds in each layer for one sequence of the two run: K and V."""
    return [(layer.keys.numel() + layer.values.numel()) // 2 for layer in cache.layers]


@pytest.mark.parametrize("context", [2, 9])
def test_values_narrower_than_keys_against_transformers(context: int) -> None:
    # MiMo-V2-Flash: keys 24 wide a head, values 16; its sliding layers hold twice the KV heads (and sinks).
    config = {**transformers.AutoConfig.for_model("mimo_v2_flash", **_MIMO).to_dict(), "model_type": "mimo_v2_flash"}
    layout = _layout(config)
    assert layout.windows == (None, 4, None)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    kinds = _kinds(layout, context)
    # By hand: full layers 2 KV heads × (24 + 16) a token; sliding layers 4 × (24 + 16), the window's 3 latest tokens.
    assert kinds["attention"].elements_per_layer == context * 2 * (24 + 16)
    assert kinds["attention, sliding 4"].elements_per_layer == min(context, 3) * 4 * (24 + 16)
    held = _per_layer_cache(_cache_after(config, context))
    assert held == [
        kinds["attention"].elements_per_layer,
        kinds["attention, sliding 4"].elements_per_layer,
        kinds["attention"].elements_per_layer,
    ]


def test_gpu_answer_with_values_narrower_than_keys(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "mimo_v2_flash", **_MIMO)
    args = ["params", "--config", path, "--gpu", "h200", "--tp", "2", "--phase", "decode", "--batch", "2", "--seq-len", "100", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # By hand, per GPU (--tp 2 halves the KV heads): 2 full layers of 100 tokens × 1 KV head × (24 + 16), 1 sliding layer of
    # 3 tokens × 2 KV heads × (24 + 16); 2 bytes; 2 sequences.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * 2 * (2 * 100 * 1 * 40 + 3 * 2 * 40)
    assert data["total_params"] == meta_build.count(json.loads(Path(path).read_text()), name="x", source="x").total_params
    assert data["roofline"]["cases"] and not data["per_gpu_memory"].get("left_out")


_GEMMA4 = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
               global_head_dim=32, sliding_window=4, layer_types=["sliding_attention"] * 3 + ["full_attention"], vocab_size=128,
               hidden_size_per_layer_input=0)  # fmt: skip


@pytest.mark.parametrize("k_eq_v", [False, True])
@pytest.mark.parametrize("context", [2, 9])
def test_two_attention_shapes_against_transformers(context: int, k_eq_v: bool) -> None:
    # Gemma 4: sliding layers of heads 16 wide, a full layer of heads 32 wide (global_head_dim); with
    # attention_k_eq_v the full layer has 1 KV head and no v_proj (its values from k_proj), yet caches K and V.
    keys = {**_GEMMA4, "attention_k_eq_v": True, "num_global_key_value_heads": 1} if k_eq_v else _GEMMA4
    config = {**transformers.AutoConfig.for_model("gemma4_text", **keys).to_dict(), "model_type": "gemma4_text"}
    layout = _layout(config)
    spec = layout.spec
    assert [spec.attention_of(i).head_dim for i in range(4)] == [16, 16, 16, 32]
    assert count_model(spec).total_params == meta_build.count(config, name="x", source="x").total_params
    kinds = _kinds(layout, context)
    # By hand: 2 KV heads × 16, K and V, the window's 3 latest tokens; the full layer 2 (or 1) × 32 × 2 every token.
    assert kinds["attention, sliding 4"].elements_per_layer == min(context, 3) * 2 * 16 * 2
    assert kinds["attention"].elements_per_layer == context * (1 if k_eq_v else 2) * 32 * 2
    held = _per_layer_cache(_cache_after(config, context))
    assert held == [kinds["attention, sliding 4"].elements_per_layer] * 3 + [kinds["attention"].elements_per_layer]


def test_a_dense_mlp_beside_the_experts() -> None:
    # Gemma 4's MoE layers (26B-A4B): a dense MLP, a router (a Linear to the experts, a scale, a scale per
    # expert) and [E, …] experts side by side; the MLP runs for every token, as a shared expert does.
    keys = {**_GEMMA4, "attention_k_eq_v": True, "num_global_key_value_heads": 2, "enable_moe_block": True, "num_experts": 8,
            "top_k_experts": 2, "moe_intermediate_size": 64}  # fmt: skip
    config = {**transformers.AutoConfig.for_model("gemma4_text", **keys).to_dict(), "model_type": "gemma4_text"}
    layout = _layout(config)
    moe = layout.spec.moe_ffn
    assert moe is not None and layout.spec.moe_layers == (0, 1, 2, 3) and (moe.experts, moe.top_k, moe.shared_d_ff) == (8, 2, 96)
    counted, built = count_model(layout.spec), meta_build.count(config, name="x", source="x")
    assert counted.total_params == built.total_params
    # By hand: 4 layers leave 6 of 8 experts idle, each gate_up (2 × 64, 64) and down (64, 64).
    assert counted.active_params == built.total_params - 4 * 6 * 3 * 64 * 64
    held = _per_layer_cache(_cache_after(config, 9))
    kinds = _kinds(layout, 9)
    assert held == [kinds["attention, sliding 4"].elements_per_layer] * 3 + [kinds["attention"].elements_per_layer]


def test_two_attention_shapes_in_the_parts_and_the_roofline(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "gemma4_text", **_GEMMA4)
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "1", "--seq-len", "64", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # By hand: q, k, v, o and the q/k norms of each shape, 64 wide: 4 heads, 2 KV heads.
    sliding = 64 * 4 * 16 + 2 * 64 * 2 * 16 + 4 * 16 * 64 + 2 * 16
    full = 64 * 4 * 32 + 2 * 64 * 2 * 32 + 4 * 32 * 64 + 2 * 32
    assert data["attention_params"] == 3 * sliding + full
    # Decoding's keys and values: 3 sliding layers × 3 tokens × 64, the full layer 64 tokens × 128; 2 bytes.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * (3 * 3 * 64 + 64 * 128)
    # hidden_size_per_layer_input 0: no per-layer input tables, whatever vocab_size_per_layer_input says
    assert not data["per_gpu_memory"].get("left_out"), data["per_gpu_memory"].get("left_out")
    text = CliRunner().invoke(app, args[:-1], env={"COLUMNS": "80"}).output
    assert "4 heads × 16" in text and "4 heads × 32" in text


_GEMMA4_E = dict(_GEMMA4, num_hidden_layers=6, layer_types=(["sliding_attention"] * 2 + ["full_attention"]) * 2, num_kv_shared_layers=3,
                 use_double_wide_mlp=True, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128)  # fmt: skip


@pytest.mark.parametrize("context", [2, 9])
def test_kv_shared_layers_against_transformers(context: int) -> None:
    # Gemma 4's E2B and E4B: the last num_kv_shared_layers build no k_proj or v_proj (each reads the keys and values
    # of the last earlier layer of its kind and keeps none), their MLP twice as wide (use_double_wide_mlp); the
    # per-layer embeddings are a table beside the layers, num_hidden_layers × hidden_size_per_layer_input wide.
    config = {**transformers.AutoConfig.for_model("gemma4_text", **_GEMMA4_E).to_dict(), "model_type": "gemma4_text"}
    layout = _layout(config)
    spec = layout.spec
    assert spec.kv_shared_layers == (3, 4, 5)
    assert count_model(spec).total_params == meta_build.count(config, name="x", source="x").total_params
    # By hand: a shared sliding layer keeps q_proj (64, 64), q_norm 16 and o_proj (64, 64); a shared full layer
    # q_proj (128, 64), q_norm 32 and o_proj (64, 128); the per-layer table 128 rows × 6 layers × 8.
    assert [spec.attention_params_of(i) for i in (3, 5)] == [64 * 64 + 16 + 64 * 64, 2 * 128 * 64 + 32]
    (table,) = (e for e in spec.extras if e.kind == "embedding")
    assert table.params_each == 128 * 6 * 8
    assert [ffn.d_ff for i in range(6) if (ffn := spec.ffn_of(i)) is not None] == [96] * 3 + [192] * 3
    kinds = _kinds(layout, context)
    cache = _cache_after(config, context)
    held = [(layer.keys.numel() + layer.values.numel()) // 2 if getattr(layer, "keys", None) is not None else 0 for layer in cache.layers]
    assert held == [kinds["attention, sliding 4"].elements_per_layer] * 2 + [kinds["attention"].elements_per_layer] + [0] * 3
    assert sum(k.elements for k in kinds.values()) == sum(held)


def test_kv_shared_layers_flops_against_flop_counter() -> None:
    # One token through the whole model: FlopCounterMode's matmuls are ffn's (no k or v projected in a shared
    # layer, the per-layer input gate and projection in every layer, and beside the layers the per-layer
    # model projection, 64 → 6 × 8).
    config = {**transformers.AutoConfig.for_model("gemma4_text", **_GEMMA4_E).to_dict(), "model_type": "gemma4_text"}
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.zeros(1, 1, dtype=torch.long))
    assert counter.get_total_flops() == count_model(_layout(config).spec).matmul_flops_per_token


_DEEPSEEK_V4 = dict(hidden_size=64, moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4, head_dim=32, q_lora_rank=16,
                    n_routed_experts=4, num_experts_per_tok=2, vocab_size=128, o_groups=2, o_lora_rank=16, index_n_heads=2,
                    index_head_dim=16, index_topk=3, sliding_window=4, hc_mult=2,
                    compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
                    layer_types=["sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention",
                                 "compressed_sparse_attention"])  # fmt: skip


def _deepseek_v4() -> dict[str, Any]:
    return {**transformers.AutoConfig.for_model("deepseek_v4", **_DEEPSEEK_V4).to_dict(), "model_type": "deepseek_v4"}


def test_deepseek_v4_hyper_connections_are_other() -> None:
    # DeepSeek-V4's attn_hc and ffn_hc mix copies of the residual stream: counted as other, never as a
    # second token mixer or a second FFN.
    config = _deepseek_v4()
    counted = meta_build.count(config, name="x", source="x")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    mixing = [m for m in model.modules() if type(m).__name__.endswith(("HyperConnection", "HyperHead"))]
    assert len(mixing) == 2 * 4 + 1
    assert counted.params_of("other") == sum(p.numel() for m in mixing for p in m.parameters(recurse=False))
    assert count_model(_layout(config).spec).total_params == counted.total_params


def _compressed(spec: Any, layer: int) -> CompressedAttentionSpec:
    attention = spec.attention_of(layer)
    assert isinstance(attention, CompressedAttentionSpec)
    return attention


def _v4_cache_elements(layer: Any) -> int:
    """Elements one of the two sequences' cache layer holds: its window's keys (the values are the same
    tensor in a compressed layer), the pooled entries, the open window's buffers and CSA's overlap."""
    held = layer.keys.numel()
    if layer.values.data_ptr() != layer.keys.data_ptr():
        held += layer.values.numel()
    for name in ("compressed_kv", "buffer_kv", "buffer_gate", "overlap_kv", "overlap_gate"):
        held += sum(t.numel() for t in getattr(layer, name, {}).values() if t is not None)
    return held // 2


@pytest.mark.parametrize("context", [3, 9, 19])
def test_deepseek_v4_decode_state_against_transformers(context: int) -> None:
    # A window of 4 and entries of 8 (HCA) and 4 (CSA) tokens: at 3 tokens no window has closed, at 9 and 19
    # some have, with tokens pending; CSA keeps the last closed window's first series (the overlap).
    config = _deepseek_v4()
    layout = _layout(config)
    spec = layout.spec
    assert [spec.attention_of(i).kind for i in range(4)] == ["SWA", "HCA", "CSA", "CSA"]
    ours = [_compressed(spec, i).cached_elements(context) for i in range(4)]
    # By hand: the window's 3 latest tokens × 32 (K = V); HCA ⌊T/8⌋ entries × 32, T mod 8 tokens' entry and gate;
    # CSA ⌊T/4⌋ entries × 32 and indexer keys × 16, T mod 4 tokens' two series (entry and gate, 2 × 32 and
    # 2 × 16 each), and once a window has closed its 4 tokens' first series (entry and gate, 32 and 16).
    window = min(context, 3) * 32
    csa_closed, csa_open = divmod(context, 4)
    hca_closed, hca_open = divmod(context, 8)
    csa = csa_closed * (32 + 16) + csa_open * 2 * (64 + 32) + (2 * 4 * (32 + 16) if csa_closed else 0)
    assert ours == [window, window + hca_closed * 32 + hca_open * 2 * 32, window + csa, window + csa]
    cache = _cache_after(config, context)
    held = [_v4_cache_elements(layer) for layer in cache.layers]
    # transformers' sliding-only layer keeps K and V as two copies of one tensor; V4 holds it once
    assert held == [2 * ours[0], *ours[1:]]
    state = _kinds(layout, context)
    assert sum(k.elements for k in state.values()) == sum(ours)


def test_deepseek_v4_flops_by_hand() -> None:
    spec = _layout(_deepseek_v4()).spec
    sliding, hca, csa = (_compressed(spec, i) for i in (0, 1, 2))
    # q_a (16, 64), q_b (128, 16), kv (32, 64), o_a (2 × 16, 64), o_b (64, 32): every layer's Linears.
    own = 16 * 64 + 128 * 16 + 32 * 64 + 32 * 64 + 64 * 32
    assert sliding.projection_flops_per_token() == 2 * own
    # HCA: its compressor's kv and gate (32, 64) each; the pooling, 2 × 32 a token.
    assert hca.projection_flops_per_token() == 2 * (own + 2 * 32 * 64) + 2 * 32
    # CSA: kv and gate (64, 64) each, the indexer's (32, 64) each, its q_b (32, 16) and weights (2, 64);
    # the pooling of two series, 4 × 32 a token, the indexer's 4 × 16.
    assert csa.projection_flops_per_token() == 2 * (own + 2 * 64 * 64 + 2 * 32 * 64 + 32 * 16 + 2 * 64) + 4 * 32 + 4 * 16
    # A query that has seen 20 tokens: the window's 4 keys; HCA 2 entries; CSA 5 entries, 3 read, all 5 scored.
    per_key = 4 * 4 * 32
    assert [a.score_flops(20) for a in (sliding, hca, csa)] == [per_key * 4, per_key * 6, per_key * 7 + 2 * 2 * 16 * 5]
    for a in (sliding, hca, csa):  # the closed form is the sum over the queries of a causal sequence
        assert [a.score_flops_sum(n) for n in (1, 7, 40)] == [sum(a.score_flops(s) for s in range(1, n + 1)) for n in (1, 7, 40)]


def test_deepseek_v4_flops_against_flop_counter() -> None:
    # One token through the whole model, module by module (FlopCounterMode cannot see the routed experts'
    # grouped matmuls, so the FFN is held to the hand count above instead): each attention's matmuls are
    # ffn's, less the pooling no window has closed for, plus the scores over the one key; the
    # hyper-connections' projections and comb mixes are ffn's, less the two collapses (2 · N · d each, a
    # sum of products torch runs as elementwise work).
    config = _deepseek_v4()
    spec = _layout(config).spec
    counts = module_flops(config, torch.zeros(1, 1, dtype=torch.long))
    (beside,) = (e for e in spec.extras if e.per_layer)
    for i in range(4):
        attention = _compressed(spec, i)
        assert counts[f"layers.{i}.self_attn"] == attention.projection_flops_per_token() - attention.pooling_flops_per_token() + 4 * 4 * 32
        children = sum(counts[f"layers.{i}.{c}"] for c in ("self_attn", "mlp"))
        assert counts[f"layers.{i}"] - children == beside.flops - 2 * (2 * 2 * 64)


# DeepSeek's reference inference (inference/model.py) builds these as Linear, not ColumnParallelLinear:
# whole on every GPU of --tp. Its query's up projection, output and indexer heads split by head.
_V4_WHOLE = re.compile(r"self_attn\.(q_a_proj|kv_proj|compressor\.(indexer\.)?(kv_proj|gate_proj|position_bias))\b")


def test_deepseek_v4_projections_to_its_latent_and_one_head_are_whole_under_tp(tmp_path: Path) -> None:
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("deepseek_v4", **_DEEPSEEK_V4))
    whole = sum(p.numel() for n, p in model.named_parameters() if _V4_WHOLE.search(n))
    # The checkpoint's MTP layers (which transformers skips) attend as layer 0, the window alone.
    window_alone = sum(p.numel() for n, p in model.model.layers[0].named_parameters() if _V4_WHOLE.search(n))
    whole += model.config.num_nextn_predict_layers * window_alone
    assert whole > window_alone > 0
    path = _tiny(tmp_path, "deepseek_v4", **_DEEPSEEK_V4)
    for tp in (2, 4):
        memory = _params_json("--config", path, "--gpu", "h200", "--weights", "bf16", "--tp", str(tp))["per_gpu_memory"]
        assert memory["whole_latent_projection_bytes"] == 2 * whole


def test_a_model_built_without_a_head_says_so(tmp_path: Path) -> None:
    # GLM-5-Next's text model has no causal-LM class in transformers: built as its base model, no LM
    # head. The note gives the head a generating checkpoint holds, vocab × d_model.
    config = transformers.AutoConfig.for_model("glm5_next_text")
    with torch.device("meta"):
        built = transformers.AutoModel.from_config(config)
    assert built.get_output_embeddings() is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config.to_dict(), "model_type": "glm5_next_text"}))
    data = _params_json("--config", str(path), "--gpu", "h200")
    assert data["total_params"] == sum(p.numel() for p in built.parameters())
    head = f"{config.vocab_size * config.hidden_size:,} more parameters"
    assert any(type(built).__name__ in note and head in note for note in data["layout"]["notes"]), data["layout"]["notes"]
    # An encoder built as its base model (ModernBERT's) has a masked-LM head, which generating never runs: no note.
    encoder = tmp_path / "modernbert.json"
    encoder.write_text(json.dumps({**transformers.AutoConfig.for_model("modernbert").to_dict(), "model_type": "modernbert"}))
    assert not any("no LM head" in note for note in _params_json("--config", str(encoder), "--gpu", "h200")["layout"]["notes"])


def test_deepseek_v4_memory_holds_the_peak_on_the_way() -> None:
    # A compressed layer's cache shrinks when a window closes (its buffered tokens pooled into one entry):
    # the memory a context needs is the most the cache held on the way there, decoding passing every one.
    spec = _layout(_deepseek_v4()).spec
    for a in (_compressed(spec, i) for i in (0, 1, 2)):
        held = [a.cached_elements(t) for t in range(60)]
        assert [a.peak_elements(t) for t in range(60)] == [max(held[: t + 1]) for t in range(60)]


def test_deepseek_v4_longest_context_fits_all_the_way(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "deepseek_v4", **_DEEPSEEK_V4)

    def memory(context: int) -> dict[str, Any]:
        args = ("--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "200000", "--seq-len", str(context))
        return _params_json(*args)["per_gpu_memory"]  # type: ignore[no-any-return]

    longest = memory(64)["max_context"]
    assert 8 < longest < 1 << 20  # the search ends inside the model's limit, past the first windows
    assert not memory(longest + 1)["fits"]
    # every context on the way fits too: the last two HCA windows before it, closes and all
    assert all(memory(context)["fits"] for context in range(longest - 16, longest + 1))


def test_deepseek_v4_gets_the_whole_answer(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "deepseek_v4", **_DEEPSEEK_V4)
    data = _params_json("--config", path, "--gpu", "h200", "--phase", "decode", "--seq-len", "19", "--tp", "2")
    spec = _layout(_deepseek_v4()).spec
    # One key-and-value head: every GPU of --tp keeps the whole cache, 2 bytes an element, at the most it
    # held on the way to 19 tokens; the decode state is what it holds at 19.
    # The checkpoint's MTP layer (num_nextn_predict_layers 1), run when decoding speculatively, keeps
    # a window alone, as layer 0 does: its 3 latest tokens × 32.
    per_sequence = sum(_compressed(spec, i).peak_elements(19) for i in (0, 1, 2, 3, 0))
    held = sum(_compressed(spec, i).cached_elements(19) for i in (0, 1, 2, 3, 0))
    assert _compressed(spec, 0).cached_elements(19) == 3 * 32
    assert data["decode_state"]["bytes_per_sequence"] == 2 * held < 2 * per_sequence
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * per_sequence
    assert [(k["layers"], k.get("multi_token_prediction", False)) for k in data["decode_state"]["kinds"]] == [
        (1, False), (1, False), (2, False), (1, True)]  # fmt: skip
    # Each attention shape its own row of per_layer, held to transformers' own modules.
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**_deepseek_v4()))
    built = [sum(p.numel() for p in layer.self_attn.parameters()) for layer in model.model.layers]
    assert [(r["layers"], r["attention_params"]) for r in data["per_layer"]] == [([0], built[0]), ([1], built[1]), ([2, 3], built[2])]
    assert data["attention"]["kind"] == "SWA" and [k["kind"] for k in data["attention_kinds"]] == ["HCA", "CSA"]
    # The verdict leaves nothing out: the MTP layer is sized (tests/test_shipped.py), and the activations
    # count the residual stream's 2 copies (hc_mult): a decoded token's input and output of 2 × 64 each,
    # beside the widest intermediate and its float32 logits (128 ÷ 2 a GPU), 2 bytes an element.
    from ffn_cli.costs.parallel_layout import Layout, intermediate_width

    memory = data["per_gpu_memory"]
    assert not memory.get("left_out") and "2 × 2 residual-stream copies × d_model" in memory["counted"]
    assert memory["activation_bytes"] == (2 * 2 * 64 + intermediate_width(spec, Layout(2, 1))) * 2 + 64 * 4


_MINIMAX = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=128,
                num_local_experts=4, num_experts_per_tok=2)  # fmt: skip


@pytest.fixture
def unknown_mixer(monkeypatch: pytest.MonkeyPatch) -> str:
    """A token mixer of a kind ffn does not know: MiniMax's decoder layer building its lightning
    attention as a subclass of another name, which ffn reads by its name (transformers builds and
    runs it as before)."""
    from transformers.models.minimax import modeling_minimax

    unknown = type("MiniMaxUnknownMixer", (modeling_minimax.MiniMaxLightningAttention,), {})
    monkeypatch.setattr(modeling_minimax, "MiniMaxLightningAttention", unknown)
    return unknown.__name__


def test_an_unsized_state_is_a_row_of_its_own(tmp_path: Path, unknown_mixer: str) -> None:
    # A mixer ffn does not size: its tensors counted by name, its state a row marked not sized, and the
    # verdict says it leaves it out.
    path = _tiny(tmp_path, "minimax", **_MINIMAX, num_hidden_layers=2, layer_types=["linear_attention"] * 2)
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--seq-len", "64", "--json", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (row,) = data["decode_state"]["kinds"]
    assert row["kind"] == unknown_mixer and row["sized"] is False and row["bytes"] == 0
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 0 and unknown_mixer in data["per_gpu_memory"]["left_out"][0]
    assert data["total_params"] == meta_build.count(json.loads(Path(path).read_text()), name="x", source="x").total_params


def test_flops_over_length_for_a_model_no_reader_knows(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "glm_moe_dsa", **_GLM5)
    data = json.loads(CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "128,1024", "--json"]).stdout)
    assert [r["seq_len"] for r in data["flops_over_seq_len"]["rows"]] == [128, 1024] and data["layout"]["kinds"]


_ENGLISH_LAYOUT_WORDS = re.compile(
    r"latent attention|heads|dense FFN|experts|shared|wide|caches while decoding|indexer|layers? \d|left out:"
)


def test_the_layout_is_said_in_the_language_of_the_run(tmp_path: Path) -> None:
    # The routed experts 1,536 wide, so widths carry separators; --json stays English, the table follows --lang.
    path = _tiny(tmp_path, "glm_moe_dsa", **{**_GLM5, "moe_intermediate_size": 1536})
    args = ["params", "--config", path, "--gpu", "h200"]
    data = json.loads(CliRunner().invoke(app, ["--lang", "zh", *args, "--json"]).stdout)
    assert [k["holds"] for k in data["layout"]["kinds"]] == [
        "latent attention: 4 heads, KV latent 16 + rope 8; indexer keys 8 per token; dense FFN: 96 wide",
        "latent attention: 4 heads, KV latent 16 + rope 8; indexer keys 8 per token; MoE: 8 experts × 1,536, top-2, shared 1,536",
    ]
    assert not data["layout"]["left_out"]
    zh = CliRunner().invoke(app, ["--lang", "zh", *args], env={"COLUMNS": "80"})
    assert zh.exit_code == 0, zh.output
    assert "潜在注意力：4 头，KV 潜向量 16 + rope 8；索引器的键每 token 8" in zh.output
    assert "8个专家×1,536" in "".join(zh.output.split())  # wherever the line breaks after the count's measure word
    assert "索引器" in zh.output
    layout_part = zh.output.split("的布局", 1)[1].split("d_model", 1)[0]
    assert not _ENGLISH_LAYOUT_WORDS.search(layout_part), layout_part


def test_one_layer_is_named_in_the_singular(tmp_path: Path, unknown_mixer: str) -> None:
    path = _tiny(tmp_path, "minimax", **_MINIMAX, num_hidden_layers=1, layer_types=["linear_attention"])
    data = json.loads(CliRunner().invoke(app, ["params", "--config", path, "--gpu", "h200", "--json", "--no-cache"]).stdout)
    (note,) = data["layout"]["left_out"]
    assert note.startswith(f"layer 0: the decode state of {unknown_mixer}"), note
    args = ["--lang", "zh", "params", "--config", path, "--gpu", "h200", "--no-cache"]
    zh = CliRunner().invoke(app, args, env={"COLUMNS": "80"}).output
    assert f"层 0：{unknown_mixer} 的解码状态" in zh and "decode state" not in zh


def test_ffns_own_fault_beside_transformers_build_is_not_the_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only transformers' build on the config's values is read as the config's fault (a usage
    error): ffn's own step before it raises as it is, for --debug to show."""
    import functools

    from ffn_cli.configs.layer_read import shell

    config = small_config("llama", {})
    assert _layout(config).spec.n_layers == config["num_hidden_layers"]  # builds as it is
    monkeypatch.setattr(shell, "auto_class", functools.partial(int, "a fault of ffn's"))  # raises in ffn's own frame
    with pytest.raises(TypeError):
        _layout(config)


def test_deepseek_v4_on_meta_traces_its_layouts_ffn(tmp_path: Path) -> None:
    # Every DeepSeek-V4 layer routes by value: on meta, layer 0 is ffn's FFN of its layout's shapes.
    path = _tiny(tmp_path, "deepseek_v4", **_DEEPSEEK_V4)
    result = CliRunner().invoke(app, ["trace", "--config", path, "--device", "meta", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"]["layer"] == 0 and data["spec"]["variant"] == "moe"
    assert any("routes by values the meta device does not hold" in n for n in data["model"]["not_built"])


def test_only_a_table_beside_the_token_table_is_read_a_row_a_token() -> None:
    # Kosmos-2.5's segment_emb sits beside its token table: a lookup table. Janus's VQ codebook
    # (vqmodel.quantize.embedding), searched by nearest neighbour, is an nn.Embedding too, beside the layers.
    kosmos = _layout({**transformers.AutoConfig.for_model("kosmos-2.5").to_dict(), "model_type": "kosmos-2.5"})
    (tables,) = [p for p in count_model(kosmos.spec).parts if p.name == "lookup tables beside the layers"]
    assert "segment_emb" in str(tables.detail)
    janus = _layout({**transformers.AutoConfig.for_model("janus").to_dict(), "model_type": "janus"})
    parts = {p.name: str(p.detail) for p in count_model(janus.spec).parts}
    assert "lookup tables beside the layers" not in parts and "vqmodel" in parts["beside the layers"]


def test_a_softmax_attentions_own_convolution_or_indexer_is_named_as_not_sized() -> None:
    # An attention with a module of its own that may keep something across tokens (a convolution ffn
    # did not read, an indexer of no shape it knows): counted, and named as what decoding keeps unsized.
    from torch import nn

    from ffn_cli.configs.layer_read.attention import softmax_attention
    from ffn_cli.configs.layer_read.tensors import LayerRead

    class Indexer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wk = nn.Linear(64, 8, bias=False)

    class Attention(nn.Module):
        def __init__(self, extra: nn.Module, name: str) -> None:
            super().__init__()
            self.q_proj, self.k_proj = nn.Linear(64, 64, bias=False), nn.Linear(64, 32, bias=False)
            self.v_proj, self.o_proj = nn.Linear(64, 32, bias=False), nn.Linear(64, 64, bias=False)
            self.gate = nn.Linear(64, 64, bias=False)  # an output gate keeps nothing
            setattr(self, name, extra)

    text = transformers.PretrainedConfig(num_attention_heads=4, num_key_value_heads=2)
    for extra, name, cls in ((nn.Conv1d(32, 32, 4, groups=32), "q_conv", "Attention"), (Indexer(), "indexer", "Attention")):
        read = LayerRead(layers=(0,), params=0)
        softmax_attention(64, text, Attention(extra, name), read)
        (said,) = [str(m) for m in read.left_out]
        assert said == f"what {name} of {cls} caches while decoding (its parameters are counted; any cache of its own is not sized)"
    read = LayerRead(layers=(0,), params=0)
    softmax_attention(64, text, Attention(nn.LayerNorm(64), "post_norm"), read)
    assert not read.left_out
