"""The built-in models by name -> the module that registers them, and the name of a saved model's manifest:
imported by nothing heavy, so the CLI can list them in `--help` without loading numpy, pandas or torch, and
`models.hf_folder` tells an mhaudit folder from a Hugging Face one without importing `models.base`."""

MODEL_FILE = "mhaudit-model.json"  # in every folder save_model writes (models.base)

BUILTIN = {
    "tfidf-lr": "mhaudit.models.linear",
    "char-tfidf-lr": "mhaudit.models.linear",
    "transformer": "mhaudit.models.transformer",
    "bert-lstm": "mhaudit.models.hybrid",
    "bert-lstm-attention": "mhaudit.models.hybrid",
    "llm-zero-shot": "mhaudit.models.llm",
}
