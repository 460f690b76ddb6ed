"""Weak labelers: the LLM labeler (a local LLM server), the lexicon labeler and the labelling prompts."""
