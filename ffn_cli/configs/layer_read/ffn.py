"""A layer's FFN read from its modules: dense (gated or not) or routed experts (as [E, …] tensors,
a list of experts, paired containers or DBRX's flat ones) with their router, shared experts,
zero-computation experts, a latent the experts read through and a stored score bias; each held
to the built module's count."""

from __future__ import annotations

import functools
from dataclasses import replace

from torch import nn
from transformers import PretrainedConfig

from ffn_cli.accounting import ParamTensor, param_tensors, total_params
from ffn_cli.configs.attribution import Owner, attribute, is_experts
from ffn_cli.configs.families.common import FamilyReader
from ffn_cli.configs.layer_read.tensors import LayerRead, Unread, linear_named, n_params, named_tensors, rest_of
from ffn_cli.configs.meta_build import config_top_k
from ffn_cli.i18n import N_, Message
from ffn_cli.models.tensor_notes import SHARED_EXPERTS_ROWS, ZERO_EXPERTS_ROWS, noted
from ffn_cli.spec import FFNSpec

__all__ = ["PAIRED_EXPERTS", "ffn_count", "paired_experts", "read_ffn"]

# The tensors of an [experts, …] container that its FFNSpec holds: the projections and their biases.
_EXPERT_TENSORS = ("gate_up_proj", "gate_proj", "up_proj", "down_proj")
# Experts held as a pair of containers, to the expert's width and back (JetMoE's)
PAIRED_EXPERTS = ("input_linear", "output_linear")
# A router's bias on its scores, kept out of the gradient: a buffer (DeepSeek-V3's, LFM2-MoE's).
_SCORE_BIASES = ("e_score_correction_bias", "expert_bias", "balancing_biases")
# Where a config names its FFN's activation (GPT-2's, OPT's and XGLM's: activation_function).
_ACTIVATION_KEYS = ("hidden_act", "hidden_activation", "activation_function", "dense_act_fn")  # T5's the last
_TORCH_ACTIVATIONS: dict[type[nn.Module], str] = {nn.ReLU: "relu", nn.GELU: "gelu", nn.SiLU: "silu"}
# FFN classes whose forward squares a ReLU, as functions no module or config key names.
_SQUARED_RELU_CLASSES = frozenset({"RwkvFeedForward"})


@functools.lru_cache(maxsize=64)
def _ffn_params(spec: FFNSpec) -> int:
    """An FFN's parameters, once a spec: a mixture's lists every expert's tensors to count them."""
    return total_params(spec)


def _experts(child: nn.Module) -> tuple[str, nn.Module] | None:
    found = [(p, mod) for p, mod in child.named_modules() if p and is_experts(p.rpartition(".")[2], type(mod).__name__)]
    innermost = [(p, mod) for p, mod in found if not any(q.startswith(p + ".") for q, _m in found)]
    return innermost[0] if len(innermost) == 1 else None


def paired_experts(d: int, block: nn.Module) -> tuple[int, int, bool] | None:
    """Experts held as two containers of their own, each one weight of [experts, out, in] (JetMoE's
    JetMoeParallelExperts, named as PAIRED_EXPERTS): input_linear from d to the expert's width
    (twice it where gated), output_linear back to d. (experts, width, gated); None for any other block."""
    children = dict(block.named_children())
    weights = {n: dict(children[n].named_parameters()) if n in children else {} for n in PAIRED_EXPERTS}
    if any(set(w) != {"weight"} or w["weight"].dim() != 3 for w in weights.values()):
        return None
    w_in, w_out = (weights[n]["weight"] for n in PAIRED_EXPERTS)
    count, f = int(w_out.shape[0]), int(w_out.shape[2])
    if tuple(w_out.shape) != (count, d, f) or w_in.shape[0] != count or w_in.shape[2] != d or w_in.shape[1] not in (f, 2 * f):
        return None
    return count, f, w_in.shape[1] == 2 * f


def _widths(d: int, up: nn.Linear | None, gate: nn.Linear | None, fused: nn.Linear | None, down: nn.Linear | None) -> tuple[int, bool]:
    """(d_ff, gated) of one MLP's projections."""
    if down is None or down.out_features != d:
        raise Unread(Message(N_("no down projection back to hidden_size")))
    f = down.in_features
    if fused is not None and fused.out_features == 2 * f:
        return f, True
    if up is None or up.out_features != f:
        raise Unread(Message(N_("no up projection to the down projection's {width} inputs"), width=f"{f:,}"))
    return f, gate is not None


# The names of an MLP's projection back to hidden_size (CPM-Ant's w_out among them).
_DOWN_NAMES = ("down_proj", "w2", "fc2", "c_proj", "fc_out", "dense_4h_to_h", "wo", "Wo", "output_linear", "proj_down", "value", "w_out")


def _mlp(module: nn.Module) -> tuple[nn.Linear | None, nn.Linear | None, nn.Linear | None, nn.Linear | None]:
    linears = [c for c in module.children() if isinstance(c, nn.Linear)]
    if isinstance(module, nn.Sequential) and len(linears) == 2:  # CTRL's ffn: Linear, ReLU, Linear
        return linears[0], None, None, linears[1]
    m = dict(module.named_modules())
    up = linear_named(m, "up_proj", "w3", "fc1", "c_fc", "fc_in", "dense_h_to_4h", "wi", "proj_up", "key", "w_1")
    gate = linear_named(m, "gate_proj", "w1", "proj_up_gate", "w_0")  # CPM-Ant's w_0 is its gate, w_1 its input
    fused = linear_named(m, "gate_up_proj", "input_linear", "Wi")  # ModernBERT's Wi: the gate and the input, one Linear
    down = linear_named(m, *_DOWN_NAMES)
    if fused is None and gate is None and up is not None and down is not None and up.out_features == 2 * down.in_features:
        return None, None, up, down  # an up projection to twice what the down one reads holds the gate too (Moshi's fc1)
    return up, gate, fused, down


def _dense(d: int, r: FamilyReader, child: nn.Module) -> FFNSpec:
    up, gate, fused, down = _mlp(child)
    f, gated = _widths(d, up, gate, fused, down)
    first = up or fused or down
    bias = first is not None and first.bias is not None
    variant = r.variant(*_ACTIVATION_KEYS, gated=gated, built=_built_activation(child))
    return FFNSpec(variant=variant, d_model=d, d_ff=f, bias=bias, fused_gate_up=fused is not None)


def _built_activation(module: nn.Module) -> str | None:
    """The activation a module runs, where it holds one of torch's own (CTRL's nn.ReLU, named by no
    config key), or where its class is one whose forward squares a ReLU (RWKV-4's channel mixing)."""
    if type(module).__name__ in _SQUARED_RELU_CLASSES:
        return "relu2"
    found = {name for m in module.modules() for cls, name in _TORCH_ACTIVATIONS.items() if type(m) is cls}
    return found.pop() if len(found) == 1 else None


def _moe(
    d: int, r: FamilyReader, hf_config: PretrainedConfig, child: nn.Module, read: LayerRead, beside: tuple[tuple[str, nn.Module], ...] = ()
) -> None:
    """Routed experts with their router, and shared experts inside `child` or `beside` it
    (Granite-4.0-H's shared_mlp sits beside block_sparse_moe)."""
    found = _experts(child)
    paired = paired_experts(d, child) if found is None else None
    if found is None and paired is None:
        raise Unread(Message(N_("no one routed experts container")))
    path, experts = found if found is not None else ("", child)
    latent = _latent_projections(d, child)
    width = latent[1] if latent is not None else d  # what an expert reads and writes
    each_expert: tuple[ParamTensor, ...] = ()  # tensors of one row an expert beside their projections
    held = {path}  # the modules that hold the experts
    if paired is not None:  # JetMoE's input_linear and output_linear, each its own container
        (count, f, gated), held = paired, set(PAIRED_EXPERTS)
        bias = False
    elif isinstance(experts, (nn.ModuleList, nn.ModuleDict)):
        count, first = len(experts), next(iter(experts.children()))
        f, gated = _widths(width, *_mlp(first))
        bias = any(n.endswith("bias") for n, _p in first.named_parameters())
    elif (flat := _flat_experts(d, experts)) is not None:
        count, f, gated = flat
        bias = False
    else:
        tensors = dict(experts.named_parameters(recurse=False))
        down = tensors.get("down_proj")
        if down is None or down.dim() != 3:
            raise Unread(Message(N_("{cls} holds no [experts, …] down_proj"), cls=type(experts).__name__))
        count = down.shape[0]
        f = down.shape[2] if down.shape[1] == width else down.shape[1]
        gated = "gate_up_proj" in tensors
        bias = any(n.endswith("bias") for n in tensors)
        # Beside the projections, a module of one row an expert (Ergo's norm after each expert's
        # output, [E, d]) or a norm every expert's output goes through (Muse Spark's post_expert_norm,
        # [width]) is counted by name beside the FFN, its work elementwise; anything else an expert
        # holds no FFNSpec sizes.
        rowed = [(n, m) for n, m in experts.named_children() if n_params(m)]
        one_norm = {n for n, m in rowed if attribute((Owner(n, type(m).__name__),))[0] == "norm"
                    and all(tuple(t.shape) == (width,) for t in m.parameters())}  # fmt: skip
        others = sorted(n for n, m in rowed if n not in one_norm and any(t.dim() != 2 or t.shape[0] != count for t in m.parameters()))
        others += sorted(n for n in tensors if not n.startswith(_EXPERT_TENSORS))
        if others:
            why = N_("{cls} holds {names} beside its experts' projections: ffn sizes experts of projections alone")
            raise Unread(Message(why, cls=type(experts).__name__, names=", ".join(others)))
        each_expert = tuple(t for n, m in rowed for t in named_tensors(f"{path}.{n}", m))
    top = config_top_k(hf_config)
    if top.value is None and top.problem is None and any(type(m).__name__.endswith("Top1Router") for m in child.modules()):
        top = replace(top, value=1)  # Switch Transformers' router sends each token to one expert, by its class
    if top.value is None:
        raise Unread(top.problem or Message(N_("no config key names the experts per token")))
    shared = [(p, mod) for p, mod in child.named_children() if "shared" in p and not isinstance(mod, nn.Linear)] + list(beside)
    gate_linear = linear_named(dict(child.named_modules()), "shared_expert_gate")
    shared_width = shared_count = 0
    shared_beside: tuple[ParamTensor, ...] = ()  # tensors beside the shared expert's projections (Ergo's norm)
    if shared:
        name, module = shared[0]
        stacked = _stacked_experts(d, module)
        if stacked is not None:  # Inkling's: S shared experts as [S, …] tensors, each of `width`
            shared_count, shared_width, tensor_names = stacked
            shared_beside = tuple(ParamTensor(f"{name}.{t.name}", t.shape) for t in rest_of(module, set()) if t.name not in tensor_names)
        else:
            projections = _mlp(module)
            shared_count, shared_width = 1, _widths(d, *projections)[0]
            used_by_mlp = {n for n, m in module.named_modules() if m is not None and any(m is x for x in projections)}
            shared_beside = tuple(ParamTensor(f"{name}.{t.name}", t.shape) for t in rest_of(module, used_by_mlp))
    spec = FFNSpec(
        variant="moe",
        d_model=d,
        d_ff=f,
        latent=latent[1] if latent is not None else None,
        experts=count,
        top_k=top.value,
        expert_variant=r.variant(*_ACTIVATION_KEYS, gated=gated),
        shared_experts=shared_count if shared_width else 0,
        shared_d_ff=shared_width or None,
        shared_expert_gate=gate_linear is not None and bool(shared_width),
        normalize_top_k=_renormalises((child, *(m for _n, m in beside)), hf_config.get_text_config()),
        bias=bias,
    )
    # LongCat-Flash's zero-computation experts: picks in the router's pool that pass the token through.
    zero = getattr(child, "zero_expert_num", 0)
    read.zero_experts = zero if isinstance(zero, int) and not isinstance(zero, bool) and zero > 0 else 0
    if not read.zero_experts and not shared_count:
        read.zero_experts = _skip_experts(child, count)
    routers = {p: _router_weight(mod, count + read.zero_experts) for p, mod in child.named_children() if p in ("gate", "router")}
    routers = {p: w for p, w in routers.items() if w is not None}
    # A router that scores a state of its own width (Zaya's MLP router over router_hidden_size):
    # every tensor of it beside the experts, the FFNSpec's d × E router not held.
    read.router_in_extra = any(child.get_submodule(p).get_parameter(str(w)).shape[1] != d for p, w in routers.items())
    used = {*held, *(p for p, _m in shared), *routers, *(["shared_expert_gate"] if spec.shared_expert_gate else [])}
    used |= set(latent[0]) if latent is not None else set()
    router_tensors: tuple[ParamTensor, ...] = ()
    for p, weight in routers.items():  # the router's weight is the FFNSpec's; its bias and any other tensor beside it
        router = child.get_submodule(p)
        if read.router_in_extra:
            router_tensors += named_tensors(p, router)
            continue
        router_tensors += tuple(ParamTensor(f"{p}.{n}", tuple(t.shape)) for n, t in router.named_parameters() if n != weight)
        if read.zero_experts:  # the FFNSpec's router scores the routed experts; these rows, the zero ones
            router_tensors += (ParamTensor(noted(f"{p}.{weight}", ZERO_EXPERTS_ROWS), (read.zero_experts, d)),)
        rows = child.get_submodule(p).get_parameter(str(weight)).shape[0]
        if shared_count and rows == count + read.zero_experts + shared_count:  # Inkling's router scores its shared experts too
            router_tensors += (ParamTensor(noted(f"{p}.{weight}", SHARED_EXPERTS_ROWS), (shared_count, d)),)
    read.ffn, read.ffn_extra = spec, router_tensors + rest_of(child, used) + each_expert + shared_beside
    read.score_bias = _score_bias(child, count + read.zero_experts)
    said = Message(N_("MoE: {count} experts × {width}, top-{top}"), count=f"{count:,}", width=f"{f:,}", top=f"{top.value:,}")
    zero_said = Message(N_(" in a pool of {pool}, {zero} of them zero-computation"), pool=f"{count + read.zero_experts:,}",
                        zero=f"{read.zero_experts:,}") if read.zero_experts else ""  # fmt: skip
    shared_said = Message(N_(", shared {width}"), width=f"{shared_width:,}") if shared_width else ""
    if shared_count > 1:
        shared_said = Message(N_(", {n} shared × {width}"), n=f"{shared_count:,}", width=f"{shared_width:,}")
    read.said.append(Message.join(said, zero_said, shared_said))


# The Linears a latent MoE's experts read and write through: to the latent, and back to d_model.
_LATENT_PROJECTIONS = (("pre_expert_proj", "post_expert_proj"), ("fc1_latent_proj", "fc2_latent_proj"))


def _latent_projections(d: int, block: nn.Module) -> tuple[tuple[str, str], int] | None:
    """A MoE block whose experts read and write a latent narrower than d_model, through a Linear
    down to it and one back up every token runs (Muse Spark's pre_expert_proj and post_expert_proj,
    Nemotron 3's fc1_latent_proj and fc2_latent_proj): (their names, the latent width); None where none."""
    children = dict(block.named_children())
    for down_name, up_name in _LATENT_PROJECTIONS:
        down, up = children.get(down_name), children.get(up_name)
        if not (isinstance(down, nn.Linear) and isinstance(up, nn.Linear)) or down.bias is not None or up.bias is not None:
            continue
        if down.in_features == up.out_features == d and down.out_features == up.in_features < d:
            return (down_name, up_name), down.out_features
    return None


def _skip_experts(block: nn.Module, experts: int) -> int:
    """Classes a MoE block's router scores past its experts, which no module of the block runs:
    picks that compute nothing, the token going on by its residual (Zaya's skip expert, the last
    of num_experts + 1; LongCat-Flash's zero experts add the token itself), fewer
    than its experts; 0 where its router has a weight of one row an expert."""
    for name, router in block.named_children():
        if name not in ("gate", "router") or _router_weight(router, experts) is not None:
            continue
        scores = [m.out_features for m in router.modules() if isinstance(m, nn.Linear) and experts < m.out_features < 2 * experts]
        if len(scores) == 1:
            return scores[0] - experts
    return 0


def _score_bias(block: nn.Module, pool: int) -> bool:
    """Whether a MoE block's router adds a bias to its scores that the checkpoint stores: a buffer
    named as transformers' routers name it, persistent (in the state dict, not a parameter), one
    entry an expert of the pool."""
    params = {n for n, _p in block.named_parameters()}
    stored = block.state_dict().items()
    return any(n.rpartition(".")[2] in _SCORE_BIASES and n not in params and t.numel() == pool for n, t in stored)


def _stacked_experts(d: int, module: nn.Module) -> tuple[int, int, tuple[str, ...]] | None:
    """Experts held as [S, …] tensors of their own (Inkling's shared experts: gate_proj and up_proj
    [S, width, d], down_proj [S, d, width]): (S, width, the tensors' names); None for any other module."""
    tensors = dict(module.named_parameters(recurse=False))
    down = tensors.get("down_proj")
    ins = [tensors.get(n) for n in ("gate_proj", "up_proj")] if "gate_up_proj" not in tensors else [tensors["gate_up_proj"]]
    if down is None or down.dim() != 3 or down.shape[1] != d or any(t is None or t.dim() != 3 for t in ins):
        return None
    count, width = int(down.shape[0]), int(down.shape[2])
    rows = width * (2 if len(ins) == 1 else 1)
    if any(t is None or tuple(t.shape) != (count, rows, d) for t in ins):
        return None
    return count, width, ("down_proj", *(("gate_up_proj",) if len(ins) == 1 else ("gate_proj", "up_proj")))


def _flat_experts(d: int, experts: nn.Module) -> tuple[int, int, bool] | None:
    """DBRX's experts: w1, v1 and w2 of [experts · width, d] each, in one module inside the
    container (DbrxExperts.mlp), the expert count the container's num_experts: (E, width, gated)."""
    count = getattr(experts, "num_experts", None)
    tensors = {n.rpartition(".")[2]: t for n, t in experts.named_parameters()}
    if not isinstance(count, int) or isinstance(count, bool) or count < 1 or set(tensors) not in ({"w1", "w2"}, {"w1", "v1", "w2"}):
        return None
    rows = {tuple(t.shape) for t in tensors.values()}
    if len(rows) != 1 or any(len(r) != 2 or r[1] != d or r[0] % count for r in rows):
        return None
    return count, next(iter(rows))[0] // count, "v1" in tensors


def _router_weight(router: nn.Module, experts: int) -> str | None:
    """The name of a router's [experts, d] weight (the zero-computation experts' rows among
    `experts`): its own `weight`, or its one Linear to the experts (Gemma 4's router.proj, beside
    its scales; LongCat-Flash's router.classifier)."""
    if hasattr(router, "weight"):
        return "weight"
    found = [f"{n}.weight" for n, m in router.named_modules() if isinstance(m, nn.Linear) and m.out_features == experts]
    return found[0] if len(found) == 1 else None


def _beside_the_mlp(children: list[tuple[str, nn.Module]]) -> list[tuple[str, nn.Module]]:
    """Gemma 4's MoE layers hold a dense MLP, a router and an experts container side by side: the
    three as one block, the MLP a shared expert every token runs, the router the experts'."""
    containers = [(n, c) for n, c in children if is_experts(n, type(c).__name__)]
    mlps = [(n, c) for n, c in children if n not in ("router", "gate") and (n, c) not in containers]
    routers = [(n, c) for n, c in children if n in ("router", "gate")]
    if len(containers) != 1 or len(mlps) != 1 or len(routers) != 1:
        return children
    block = nn.Module()
    block.add_module("experts", containers[0][1])
    block.add_module("shared_mlp", mlps[0][1])
    block.add_module(routers[0][0], routers[0][1])
    return [(f"{mlps[0][0]}, {routers[0][0]}, {containers[0][0]}", block)]


def _loose_linears(children: list[tuple[str, nn.Module]]) -> list[tuple[str, nn.Module]]:
    """OPT's and XGLM's FFN: fc1 and fc2 straight in the decoder layer, no MLP module around
    them: read as one MLP."""
    if len(children) < 2 or not all(isinstance(c, nn.Linear) for _n, c in children):
        return children
    block = nn.Module()
    for name, child in children:
        block.add_module(name, child)
    return [(", ".join(n for n, _c in children), block)]


def _by_modality(d: int, children: list[tuple[str, nn.Module]], read: LayerRead) -> list[tuple[str, nn.Module]]:
    """ERNIE 4.5 VL's MoE block: text_moe and vision_moe, each a router and experts of its own,
    and shared experts every token runs. The text MoE with the shared experts is the layer's FFN;
    the vision MoE's tensors are held beside it, run on image tokens alone (never by a text token)."""
    if len(children) != 1:
        return children
    name, block = children[0]
    parts = dict(block.named_children())
    experts = {n: found for n, c in parts.items() if n.endswith("_moe") and (found := _experts(c)) is not None}
    others = [n for n in experts if n != "text_moe"]
    if "text_moe" not in experts or len(others) != 1:
        return children
    read.image_experts = tuple(_one_matrix(t) for t in named_tensors(f"{name}.{others[0]}", parts[others[0]]))
    stacked = _stacked_experts(d, experts[others[0]][1])
    if stacked is not None:  # the words of the layout's row, after the text MoE's
        read.image_experts_shape = stacked[:2]
    return [(f"{name}.text_moe", parts["text_moe"])] + [(f"{name}.{n}", c) for n, c in parts.items() if n not in ("text_moe", others[0])]


def _one_matrix(t: ParamTensor) -> ParamTensor:
    """Experts held as one [E, out, in] tensor ("experts (gate_up_proj)") as the [E · out, in]
    matrix their E Linears stack to, stored and divided as a routed expert's projections are."""
    if len(t.shape) != 3 or not t.name.endswith(")"):
        return t
    module, _sep, leaf = t.name.removesuffix(")").partition(" (")
    return ParamTensor(f"{module}.{leaf}", (t.shape[0] * t.shape[1], t.shape[2]))


def read_ffn(d: int, r: FamilyReader, hf_config: PretrainedConfig, children: list[tuple[str, nn.Module]], read: LayerRead) -> None:
    children = _by_modality(d, _loose_linears(_beside_the_mlp(children)), read)
    moe = [(n, c) for n, c in children if _experts(c) is not None or paired_experts(d, c) is not None]
    beside: tuple[ParamTensor, ...] = ()
    if len(moe) == 1 and len(children) <= 2:
        _moe(d, r, hf_config, moe[0][1], read, tuple(c for c in children if c[0] != moe[0][0]))
    elif not moe and len(children) == 1:
        name, child = children[0]
        read.ffn = _dense(d, r, child)
        read.said.append(Message(N_("dense FFN: {width} wide"), width=f"{read.ffn.d_ff:,}"))
        # Tensors beside its projections and its variant's own (Apertus' xIELU parameters), such as
        # Dory's per-unit scales: kept by name with the layer's other tensors.
        projections = {n for n, mod in child.named_modules() if mod is not None and mod in _mlp(child)}
        projections |= {t.name.rpartition(".")[0] for t in param_tensors(read.ffn)}
        beside = tuple(ParamTensor(f"{name}.{t.name}" if "(" not in t.name else f"{name} {t.name}", t.shape)
                       for t in rest_of(child, projections))  # fmt: skip
        read.other += beside
    else:
        raise Unread(Message(N_("the FFN is split over {names}"), names=", ".join(n for n, _c in children)))
    built, counted = sum(n_params(c) for _n, c in children), ffn_count(read) + sum(t.count for t in beside)
    if counted != built:
        raise Unread(
            Message(N_("its FFN counts {counted} parameters where the module holds {built}"), counted=f"{counted:,}", built=f"{built:,}")
        )
    if read.image_experts_shape is not None:
        n, width = read.image_experts_shape
        read.said.append(Message(N_("{n} vision experts × {width} beside them, a router of their own"), n=f"{n:,}", width=f"{width:,}"))


def _renormalises(modules: tuple[nn.Module, ...], text: PretrainedConfig) -> bool:
    """Whether a MoE's router rescales a token's top-k weights to sum to 1: as its module says
    (norm_topk_prob), else its config, else yes: a router whose class and config name no choice
    renormalises (Mixtral's, Qwen3.5's and Gemma 4's: top_k_weights /= their sum)."""
    said = next(
        (m.norm_topk_prob for top in modules for m in top.modules() if isinstance(getattr(m, "norm_topk_prob", None), bool)),
        None,
    )
    if said is None:
        said = getattr(text, "norm_topk_prob", None)
    return said if isinstance(said, bool) else True


def ffn_count(read: LayerRead) -> int:
    """The FFN as read: its spec's parameters and the tensors beside them (a router's bias), less
    the spec's own router where the layer's is a module of its own (Zaya's), in the tensors beside."""
    if read.ffn is None:
        return 0
    dropped = read.ffn.experts * read.ffn.d_model if read.router_in_extra else 0
    return _ffn_params(read.ffn) + sum(t.count for t in read.ffn_extra) - dropped
