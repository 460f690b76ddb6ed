"""Experiments: a TOML config names corpora, mappings and models; the runner trains folders of seeds and audits
their predictions; the demo runs both audits on the built-in synthetic corpora."""
