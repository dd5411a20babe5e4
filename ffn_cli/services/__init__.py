"""What the commands and the Python API both answer, from a checked request to the data and the
views of its result: the CLI and `ffn_cli.*` call the same functions here."""
