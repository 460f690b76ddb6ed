"""Certify a model on a target with the fewest human labels (docs/validation.md, "Certify a model").

`mhaudit labels sample --strategy estimate` draws the posts to label (tables.certification_sample on the design
of tables.sample_design, where the monitor draws its suggested samples too); `mhaudit audit certify` combines
their human labels with the model's scores on every pooled post (`audit_certify`):
prediction-powered estimates of the target's prevalence, accuracy and macro-F1 (stats.ppi) beside the
labels-only estimate from the same labels, and a verdict "certified on the target with N human labels".
"""

from mhaudit.core.lazy import lazy_names

# each name loads from its module when first used: the command line imports an audit's options alone
__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "AXIS": ".report",
    "CertifyInputs": ".options",
    "CertifyOptions": ".options",
    "audit_certify": ".report",
    "Pool": "mhaudit.tables.sample_design",
    "pool_of": "mhaudit.tables.sample_design",
    "certification_sample": "mhaudit.tables.certification_sample",
    "read_design": "mhaudit.tables.certification_sample",
    "write_certification_sample": "mhaudit.tables.certification_sample",
})
