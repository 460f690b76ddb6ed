"""Certify a model on a target with the fewest human labels (docs/validation.md, "Certify a model"): the sample's
human labels and the model's scores on every pooled post give prediction-powered estimates (`audit_certify`).
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "AXIS": ".report",
        "CertifyInputs": ".options",
        "CertifyOptions": ".options",
        "audit_certify": ".report",
        "Pool": "mhaudit.tables.sample_design",
        "pool_of": "mhaudit.tables.sample_design",
        "certification_sample": "mhaudit.tables.certification_sample",
        "read_design": "mhaudit.tables.certification_sample",
        "write_certification_sample": "mhaudit.tables.certification_sample",
        "score_items": ".scoring",
    },
)
