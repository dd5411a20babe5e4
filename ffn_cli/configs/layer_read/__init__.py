"""The layout of a model no reader knows, read from transformers' own modules: one decoder layer
of each kind built on the meta device, never the whole model.

Which layers share a kind is read from the config alone: two layers are of one kind when every
per-layer entry of the text config agrees on them (a list with one value a layer, such as
layer_types; a list of layer indices, such as mlp_only_layers; a layer rule such as
first_k_dense_replace, decoder_sparse_step or full_attention_interval). One layer of each kind
is built with the decoder layer class the model's own class names, and its modules are read:

  token mixer   softmax attention (q/k/v/o projections or one fused qkv projection: heads, KV
                heads, head width, biases, q/k norms, sinks, a q_proj twice as wide gating the
                output, a sliding window; a KV-shared layer without k/v projections), latent
                attention (kv_a_proj_with_mqa, kv_b_proj), DeepSeek-V4's compressed attention
                (compressed_attention.py), a Gated DeltaNet, a Mamba-1 or Mamba-2 mixer, another
                delta rule, lightning attention or a short convolution (their state's widths); any
                other mixer counted tensor by tensor, its decode state named as not sized
  FFN           dense (gated or not), or routed experts ([E, …] tensors or a list of experts)
                with a router, shared experts and zero-computation experts in its pool, and
                whether the router adds a score bias its checkpoint stores (a buffer, no parameter)
  sublayers     a layer whose attentions are a list of N (LongCat-Flash's two), each sublayer
                one of num_hidden_layers, as the cache numbers them
  beside them   the layer's norms, and tensors of no part (kept per layer, counted exactly;
                DeepSeek-V4's hyper-connections, which mix copies of the residual stream)

Each part read is checked against the built module's own parameter count: a part whose count the
spec does not reproduce is refused, naming the layers and the module, never counted as something
else. The embeddings, final norm and head are the config's (vocab_size × hidden_size, tied as it
says). torch and transformers: imported only when such a model is asked for.

The modules, each reading on the ones above it: `tensors` (a layer read, and the helpers every
part's reader uses), `kinds` (which layers share a kind; the decoder layer classes), `mixers`,
`ffn` and `attention` (each part by its modules), `layer` (one built layer sorted into its parts),
`shell` (what sits beside the layers; the builds on meta), `assembly` (the reads as one ModelSpec
and BuiltLayout) and `layout` (`read_layout`, which builds, reads and assembles).
"""

from ffn_cli.configs.layer_read.kinds import decoder_layer_classes, layer_kinds
from ffn_cli.configs.layer_read.layout import read_layout
from ffn_cli.configs.layer_read.tensors import LayerRead

__all__ = ["LayerRead", "decoder_layer_classes", "layer_kinds", "read_layout"]
