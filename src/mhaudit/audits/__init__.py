"""The audits, each `tables -> AuditResult` through one door; the contract they share is in docs/architecture.md
(tests/audits/test_contract.py holds every entry of `AUDITS` to it)."""

AUDITS = {
    "cpfe": "mhaudit.audits.cpfe:audit_cpfe",
    "divergence": "mhaudit.audits.divergence:audit_divergence",
    "agreement": "mhaudit.audits.agreement:audit_agreement",
    "estimate": "mhaudit.audits.estimate:audit_estimate",
    "certify": "mhaudit.audits.certify:audit_certify",
    "model_selection": "mhaudit.audits.model_selection:audit_model_selection",
    "monitor": "mhaudit.audits.monitor:audit_monitor",
}


def audit_function(name: str):
    """The entry point of the audit called `name` (a key of AUDITS)."""
    import importlib

    module, function = AUDITS[name].split(":")
    return getattr(importlib.import_module(module), function)
