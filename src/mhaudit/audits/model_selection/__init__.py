"""Model selection under a stratified holdout and cross-validation (the Bluesky paper's "Benchmarking";
the command `mhaudit audit model-selection`): several models on one labelled binary corpus, on folds drawn once so
that every model sees the same rows, each (protocol, fold, model) one cacheable job, scored against the
training labels and every reference label source, with the protocol effect (CV minus holdout), the
efficiency frontier and the recall / precision trade-off in one report (docs/model_selection.md).
"""

from __future__ import annotations

from mhaudit.audits.model_selection.options import ModelSelectionInputs, ModelSelectionOptions
from mhaudit.audits.model_selection.run import audit_model_selection

__all__ = ["ModelSelectionInputs", "ModelSelectionOptions", "audit_model_selection"]
