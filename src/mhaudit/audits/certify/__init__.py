"""Certify a model on a target with the fewest human labels (docs/validation.md, "Certify a model").

`mhaudit labels sample --strategy estimate` draws the posts to label (tables.certification_sample on the design
of tables.sample_design, where the monitor draws its suggested samples too); `mhaudit audit certify` combines
their human labels with the model's scores on every pooled post (`audit_certify`):
prediction-powered estimates of the target's prevalence, accuracy and macro-F1 (stats.ppi) beside the
labels-only estimate from the same labels, and a verdict "certified on the target with N human labels".
"""

from mhaudit.audits.certify.options import CertifyInputs, CertifyOptions
from mhaudit.audits.certify.report import AXIS, audit_certify
from mhaudit.tables.certification_sample import certification_sample, read_design, write_certification_sample
from mhaudit.tables.sample_design import Pool, pool_of

__all__ = ["AXIS", "CertifyInputs", "CertifyOptions", "Pool", "pool_of", "certification_sample",
           "write_certification_sample", "read_design", "audit_certify"]
