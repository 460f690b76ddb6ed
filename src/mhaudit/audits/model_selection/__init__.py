"""Model selection under a stratified holdout and cross-validation (the Bluesky paper's "Benchmarking";
the command `mhaudit audit model-selection`): several models on one labelled binary corpus, on folds drawn once so
that every model sees the same rows, each (protocol, fold, model) one cacheable job, scored against the
training labels and every reference label source, with the protocol effect (CV minus holdout), the
efficiency frontier and the recall / precision trade-off in one report (docs/model_selection.md).
"""

from mhaudit.core.lazy import lazy_names

# each name loads from its module when first used: the command line imports an audit's options alone
__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "ModelSelectionInputs": ".options",
    "ModelSelectionOptions": ".options",
    "audit_model_selection": ".run",
})
