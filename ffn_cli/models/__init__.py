"""A whole model as the accounting sees it, pure Python (no torch): `ModelSpec`
(`models.spec`), every tensor it places (`models.layout`), its counts (`models.count` →
`ModelParams`), FFN against attention FLOPs as the context grows (`models.seq_flops`); and one
FFN beside its attention (`models.layer`) and variants side by side (`models.comparison`).
Reading a config into a `ModelSpec` is `configs/`; what a model costs on hardware is `costs/`.
Each is imported from its module.
"""
