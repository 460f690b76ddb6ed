"""Certify a model on a target with the fewest human labels (docs/validation.md, "Certify a model").

`validate sample --strategy estimate` draws the posts to label (tables.certification_sample on the design
of tables.sample_design, where the monitor draws its suggested samples too); `validate report --estimate`
combines their human labels with the model's scores on every pooled post (`certify_on_target`):
prediction-powered estimates of the target's prevalence, accuracy and macro-F1 (stats.ppi) beside the
labels-only estimate from the same labels, and a verdict "certified on the target with N human labels".
"""

from mhaudit.audits.certify.report import AXIS, CertifyOptions, certify_on_target
from mhaudit.tables.certification_sample import certification_sample, read_design, write_certification_sample
from mhaudit.tables.sample_design import Pool, pool_of

__all__ = ["AXIS", "CertifyOptions", "Pool", "pool_of", "certification_sample", "write_certification_sample",
           "read_design", "certify_on_target"]
