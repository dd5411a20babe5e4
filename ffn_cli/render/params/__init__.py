"""`ffn params` results as rich tables or JSON-ready dicts, one module per result, each table and
its JSON built from the same dataclass so the two cannot disagree:

- `report`: one FFN, tensor by tensor, beside its attention;
- `comparison`: variants side by side (optionally sized to one parameter count);
- `model`: a whole model, part by part, with its memory;
- `presets`: the shipped presets with their totals;
- `explain`: `--explain`, why the FFN is about two thirds of a layer;
- `common`: the table, percent and ratio formats they share.
"""
