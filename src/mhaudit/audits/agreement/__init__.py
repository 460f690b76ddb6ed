"""Weak-label validation (docs/validation.md): a stratified sample of items by their weak label for blind human
annotation (`sample_for_validation`), then the agreement report on their labels (`audit_agreement`).
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "AgreementInputs": ".options",
        "AgreementOptions": ".options",
        "audit_agreement": ".report",
        "labels_from_corpus": ".labels",
        "read_validation_set": ".sample",
        "sample_for_validation": ".sample",
        "write_validation_set": ".sample",
    },
)
