"""A model's layout read from one built decoder layer of each kind (ffn_cli/models/layer_build.py),
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
from ffn_cli.errors import FFNError, FFNRuntimeError
from ffn_cli.models.count import count_model
from ffn_cli.models.decode_state import decode_state
from ffn_cli.models.families import model_spec_from_config
from ffn_cli.models.families.common import Unreadable
from ffn_cli.models.source import LoadedModel
from ffn_cli.render.presenters.costs import costs_data
from ffn_cli.services.costs import CostOptions, model_costs
from tests.model_configs import CASES, small_config

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from ffn_cli.models import meta_build  # noqa: E402  (torch and transformers)
from ffn_cli.models.layer_build import layer_kinds, read_layout  # noqa: E402


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


@pytest.mark.parametrize("model_type", ["qwen3_5", "qwen3_5_moe", "glm_moe_dsa", "deepseek_v32", "kimi_linear", "gemma3", "phi"])
def test_default_configs_count_the_whole_build(model_type: str) -> None:
    # transformers' own default configs of the newest model_types, at their real sizes.
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params


_REFUSED = {
    "jamba": "built from 2 classes",
    "olmo_hybrid": "built from 2 classes",
    "zamba2": "built from 2 classes (Zamba2HybridLayer, Zamba2MambaDecoderLayer)",
    "hrm_text": "layers beside its num_hidden_layers",
    "recurrent_gemma": "different tensors beside their parts",
    "blt": "names no hidden_size",
}


@pytest.mark.parametrize("model_type", ["doge", "mamba2", "falcon_mamba", *_REFUSED])
def test_no_silent_miscount(model_type: str) -> None:
    # Families whose layers hold tensors of their own (Doge's residual scales), are blocks of
    # another name (Mamba-2), come from two classes (Jamba, OLMo-Hybrid, Zamba2), outnumber
    # num_hidden_layers (HRM), alternate by a cycled pattern (RecurrentGemma) or lack the text
    # sizes (BLT): counted exactly, or refused by name, never counted as something else.
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    if model_type in _REFUSED:
        # A config without the text sizes is bad input (exit 2); a layout ffn does not size is a limit of the tool (exit 1).
        with pytest.raises(FFNError if model_type == "blt" else FFNRuntimeError, match=re.escape(_REFUSED[model_type])):
            _layout(config)
        return
    layout = _layout(config)
    assert count_model(layout.spec).total_params == meta_build.count(config, name="x", source="x").total_params
    if model_type == "falcon_mamba":  # a mixer of its own: counted tensor by tensor, its state named as not sized
        assert layout.spec.mixer is not None and not layout.spec.mixer.state_sized and layout.left_out


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
    CostOptions(gpu="h200", phase="decode", batch="1,8", seq_len="4096"),
    CostOptions(gpu="h100", phase="prefill", batch="2", seq_len="2048", tp=2),
    CostOptions(gpu="h200", phase="decode", batch="16", seq_len="32768", tp=2, ep=2),
    CostOptions(weights="fp8", gpu="h200", phase="decode", batch="4", seq_len="1000"),
]


@pytest.mark.parametrize("model_type", ["llama", "qwen3_next", "deepseek_v3", "granitemoehybrid", "gpt_oss", "gemma3_text"])
@pytest.mark.parametrize("asked", range(len(_ASKED)))
def test_layout_and_reader_give_the_same_answer(model_type: str, asked: int) -> None:
    config = {**transformers.AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
    opts = _ASKED[asked]
    if opts.ep != 1 and model_type in ("llama", "gemma3_text"):
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
    for i in mixer.layers:
        conv = cache.get_conv_state(i, state_idx=0)
        assert conv.numel() // 2 - conv.shape[1] == mixer.conv_state_elements
        assert cache.get_recurrent_state(i, state_idx=0).numel() // 2 == mixer.recurrent_state_elements
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


def test_gpu_answer_for_a_model_no_reader_knows(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "glm_moe_dsa", **_GLM5)
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--batch", "2", "--seq-len", "100", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # By hand: 4 layers of MLA, each token its 16-wide latent and 8-wide rotary key, 2 bytes, 2 sequences.
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 2 * 100 * 4 * (16 + 8) * 2
    assert data["decode_state"]["kinds"][0]["elements_per_token"] == 16 + 8
    assert data["roofline"]["cases"]
    # The indexer's own key cache is not sized: named where the verdict is, never counted as MLA's.
    assert any("indexer" in x for x in data["per_gpu_memory"]["left_out"]) and data["layout"]["left_out"]
    assert data["total_params"] == meta_build.count(json.loads(Path(path).read_text()), name="x", source="x").total_params
    text = CliRunner().invoke(app, args[:-1], env={"COLUMNS": "80"}).output
    assert "the verdict leaves out" in text and "indexer" in text


def test_a_layer_kind_ffn_cannot_size_is_named(tmp_path: Path) -> None:
    # MiMo-V2-Flash's values are narrower than its keys: one head width is all an AttentionSpec holds.
    path = _tiny(tmp_path, "mimo_v2_flash", hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=24, v_head_dim=16, vocab_size=128, n_routed_experts=4, moe_layer_freq=[0, 1],
                 hybrid_layer_pattern=[0, 1])  # fmt: skip
    result = CliRunner().invoke(app, ["params", "--config", path, "--gpu", "h200"])
    # A config transformers builds whose layout is beyond what ffn sizes: a runtime refusal, not a usage error.
    assert result.exit_code == 1
    assert "ffn cannot lay out layer 0 of" in result.output and "values of 16 per head beside keys of 24" in result.output
    zh = CliRunner().invoke(app, ["--lang", "zh", "params", "--config", path, "--gpu", "h200"])
    assert zh.exit_code == 1 and "每头的值宽 16，键宽 24" in zh.output and "层 0" in zh.output
    assert not re.search(r"values|per head|beside keys|lay out|layers? 0", zh.output), zh.output
    # Counting alone still builds the whole model.
    assert CliRunner().invoke(app, ["params", "--config", path]).exit_code == 0


def test_an_unsized_state_is_a_row_of_its_own(tmp_path: Path) -> None:
    # Falcon-Mamba's mixer is none ffn sizes: its tensors counted by name, its state a row marked
    # not sized, and the verdict says it leaves it out.
    path = _tiny(tmp_path, "falcon_mamba", hidden_size=64, num_hidden_layers=2, state_size=4, vocab_size=128, intermediate_size=128)
    args = ["params", "--config", path, "--gpu", "h200", "--phase", "decode", "--seq-len", "64", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (row,) = data["decode_state"]["kinds"]
    assert row["kind"] == "FalconMambaMixer" and row["sized"] is False and row["bytes"] == 0
    assert data["per_gpu_memory"]["kv_cache_bytes"] == 0 and "FalconMambaMixer" in data["per_gpu_memory"]["left_out"][0]
    assert data["total_params"] == meta_build.count(json.loads(Path(path).read_text()), name="x", source="x").total_params


def test_flops_over_length_for_a_model_no_reader_knows(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "glm_moe_dsa", **_GLM5)
    data = json.loads(CliRunner().invoke(app, ["params", "--config", path, "--seq-len", "128,1024", "--json"]).stdout)
    assert [r["seq_len"] for r in data["flops_over_seq_len"]["rows"]] == [128, 1024] and data["layout"]["kinds"]


_ENGLISH_LAYOUT_WORDS = re.compile(r"latent attention|heads|dense FFN|experts|shared|wide|caches while decoding|layers? \d|left out:")


def test_the_layout_is_said_in_the_language_of_the_run(tmp_path: Path) -> None:
    # The routed experts 1,536 wide, so widths carry separators; --json stays English, the table follows --lang.
    path = _tiny(tmp_path, "glm_moe_dsa", **{**_GLM5, "moe_intermediate_size": 1536})
    args = ["params", "--config", path, "--gpu", "h200"]
    data = json.loads(CliRunner().invoke(app, ["--lang", "zh", *args, "--json"]).stdout)
    assert [k["holds"] for k in data["layout"]["kinds"]] == [
        "latent attention: 4 heads, KV latent 16 + rope 8; dense FFN: 96 wide",
        "latent attention: 4 heads, KV latent 16 + rope 8; MoE: 8 experts × 1,536, top-2, shared 1,536",
    ]
    assert data["layout"]["left_out"][0].startswith("layers 0–3: what indexer of GlmMoeDsaAttention caches while decoding")
    zh = CliRunner().invoke(app, ["--lang", "zh", *args], env={"COLUMNS": "80"})
    assert zh.exit_code == 0, zh.output
    assert "潜在注意力：4 头，KV 潜在向量 16 + rope 8；稠密 FFN：宽 96" in zh.output and "8 个专家 × 1,536" in zh.output
    assert "略去：层 0–3：GlmMoeDsaAttention 的 indexer" in zh.output
    layout_part = zh.output.split("的布局", 1)[1].split("d_model", 1)[0]
    assert not _ENGLISH_LAYOUT_WORDS.search(layout_part), layout_part


def test_one_layer_is_named_in_the_singular(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "falcon_mamba", hidden_size=64, num_hidden_layers=1, state_size=4, vocab_size=128, intermediate_size=128)
    data = json.loads(CliRunner().invoke(app, ["params", "--config", path, "--gpu", "h200", "--json"]).stdout)
    (note,) = data["layout"]["left_out"]
    assert note.startswith("layer 0: the decode state of FalconMambaMixer"), note
    zh = CliRunner().invoke(app, ["--lang", "zh", "params", "--config", path, "--gpu", "h200"], env={"COLUMNS": "80"}).output
    assert "略去：层 0：FalconMambaMixer 的解码状态" in zh and "decode state" not in zh
