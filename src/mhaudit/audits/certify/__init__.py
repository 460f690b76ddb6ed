"""Certify a model on a target with the fewest human labels (docs/validation.md, "Certify a model").

`validate sample --strategy estimate` draws the posts to label (audits.certify.sample); `validate report
--estimate` combines their human labels with the model's scores on every pooled post (`certify_on_target`):
prediction-powered estimates of the target's prevalence, accuracy and macro-F1 (stats.ppi) beside the
labels-only estimate from the same labels, and a verdict "certified on the target with N human labels".
"""

from mhaudit.audits.certify.design import Pool, pool_of
from mhaudit.audits.certify.report import AXIS, CertifyOptions, certify_on_target
from mhaudit.audits.certify.sample import certification_sample, read_design, write_certification_sample

__all__ = ["AXIS", "CertifyOptions", "Pool", "pool_of", "certification_sample", "write_certification_sample",
           "read_design", "certify_on_target"]
