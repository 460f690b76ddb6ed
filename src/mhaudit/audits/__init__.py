"""Audits: functions from tables and one typed options object to an `AuditResult` (report/result.py).

`AUDITS` names every audit's entry point ("module:function"); the common audit test
(tests/audits/test_contract.py) runs each of them through one contract.
"""

AUDITS = {
    "cpfe": "mhaudit.audits.cpfe:audit_cpfe",
    "divergence": "mhaudit.audits.divergence:audit_divergence",
    "agreement": "mhaudit.audits.agreement:agreement_report",
    "estimate": "mhaudit.audits.estimate:estimate_performance",
    "certify": "mhaudit.audits.certify:certify_on_target",
    "model_selection": "mhaudit.audits.model_selection:run_model_selection",
    "monitor": "mhaudit.audits.monitor:audit_monitor",
}


def audit_function(name: str):
    """The entry point of the audit called `name` (a key of AUDITS)."""
    import importlib

    module, function = AUDITS[name].split(":")
    return getattr(importlib.import_module(module), function)
