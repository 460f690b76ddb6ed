"""Weak-label validation (Bluesky paper, section on human validation; issue 7; docs/validation.md): draw a
stratified sample of items by their weak label for blind human annotation (`sample`, written and read by
`write_validation_set` / `read_validation_set`), then measure agreement (`audit_agreement`): human-human
kappa and alpha before adjudication, the weak labeler against the reference labels (`reference`), design-weighted
estimates for the sampled pool (`design`) and the weak labeler's error sources. `labels` reads one task's
labels and names the weak labeler; `labels_from_corpus` enters a data set's own labels as a reference.
"""

from mhaudit.core.lazy import lazy_names

# each name loads from its module when first used: the command line imports an audit's options alone
__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "AgreementInputs": ".options",
    "AgreementOptions": ".options",
    "audit_agreement": ".report",
    "labels_from_corpus": ".labels",
    "read_validation_set": ".sample",
    "sample_for_validation": ".sample",
    "write_validation_set": ".sample",
})
