"""Corpora: the canonical post table (schema), the source importers, emotion→clinical label mappings, splits,
deduplication and description."""
