"""The built-in models by name -> the module that registers them: imported by nothing heavy, so the CLI can
list them in `--help` without loading numpy, pandas or torch."""

BUILTIN = {
    "tfidf-lr": "mhaudit.models.linear",
    "char-tfidf-lr": "mhaudit.models.linear",
    "transformer": "mhaudit.models.transformer",
    "bert-lstm": "mhaudit.models.hybrid",
    "bert-lstm-attention": "mhaudit.models.hybrid",
    "llm-zero-shot": "mhaudit.models.llm",
}
