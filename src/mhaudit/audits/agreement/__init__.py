"""Weak-label validation (Bluesky paper, section on human validation; issue 7; docs/validation.md): draw a
stratified sample of items by their weak label for blind human annotation (`sample`, written and read by
`write_validation_set` / `read_validation_set`), then measure agreement (`audit_agreement`): human-human
kappa and alpha before adjudication, the weak labeler against the reference labels (`reference`), design-weighted
estimates for the sampled pool (`design`) and the weak labeler's error sources. `labels` reads one task's
labels and names the weak labeler; `labels_from_corpus` enters a data set's own labels as a reference.
"""

from __future__ import annotations

from mhaudit.audits.agreement.labels import labels_from_corpus
from mhaudit.audits.agreement.options import AgreementInputs, AgreementOptions
from mhaudit.audits.agreement.report import audit_agreement
from mhaudit.audits.agreement.sample import read_validation_set, sample_for_validation, write_validation_set

__all__ = ["sample_for_validation", "write_validation_set", "read_validation_set", "AgreementInputs",
           "AgreementOptions", "audit_agreement", "labels_from_corpus"]
