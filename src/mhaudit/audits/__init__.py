"""Audits: functions from one input and one typed options object to an `AuditResult` (report/result.py).

Every audit has one door, `audit_<name>(inputs, <Name>Options(...), *, progress=None)`, and its options (and,
where it reads several tables, its `<Name>Inputs`) in `audits/<name>/options.py`, checked on construction.
`AUDITS` names every audit's entry point ("module:function"); the common audit test
(tests/audits/test_contract.py) runs each of them through one contract.
"""

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
