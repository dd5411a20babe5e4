"""Reading a model, pure Python (no torch) but for the transformers path: a config.json, a
preset shipped as package data or a Hub model id (`configs.source`, `configs.files`,
`configs.hub`) read by its family's reader (`configs.families`) into a `ModelSpec`
(`models.spec`), with each layer's attention reach (`configs.windows`); a `model_type` no
reader knows counted and laid out from transformers' own modules, built on meta
(`configs.fallback`, which steps into `configs.meta_build` and `configs.layer_read` only
then). Each is imported from its module: `ffn params` for one FFN reads none of them."""
