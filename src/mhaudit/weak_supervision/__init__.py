"""Labelers: LLM clients, the annotation app, adjudication."""
