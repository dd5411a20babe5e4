"""What a model costs on hardware, pure Python (no torch): its weights as stored
(`costs.weights`, with `costs.compressed_tensors` and what a checkpoint ships beside the model,
`costs.shipped`), its layout over GPUs under --tp / --ep (`costs.parallel_layout`) and what one
GPU holds of it (`costs.rank_memory`, `costs.gpu_memory`: the fit verdict), what decoding keeps
per sequence (`costs.decode_state`), and the roofline (`costs.roofline`). Each is imported from
its module."""
