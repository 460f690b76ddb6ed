"""Model selection under a stratified holdout and cross-validation (docs/model_selection.md): several models on
one labelled binary corpus, on folds drawn once so that every model sees the same rows.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "ModelSelectionInputs": ".options",
        "ModelSelectionOptions": ".options",
        "audit_model_selection": ".run",
    },
)
