"""The roofline, in one place: the bound itself (`bound`: time ≥ max(FLOPs / peak, bytes /
bandwidth), and the distinct experts a MoE pass reads), one forward pass of a model
(`model_pass`), one GPU's share of it under --tp / --ep with its communication (`per_gpu`), and
one FFN on a GPU without a model around it (`one_ffn`). Each is imported from its module."""
