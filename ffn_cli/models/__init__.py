"""Real models and the layer around one FFN, pure Python (no torch).

config.json or a preset → `ModelSpec` (`models.spec`, read by `models.families`) →
`count_model` (`models.count`) → `ModelParams`; and one FFN beside its attention →
`ffn_report` (`models.layer`) / `compare_variants` (`models.comparison`). Each is imported from
its module: `ffn params` for one FFN reads none of the model readers.
"""
