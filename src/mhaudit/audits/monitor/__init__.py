"""Monitor a deployed classifier on the collected stream, window by window (docs/monitor.md): drift, change
alarms, the label-free estimate and, on an alert, a suggested validation sample. Outputs carry counts, rates and
pseudonymous post ids only: no post text, no DID.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "AXIS": ".verdicts",
        "MonitorEnsemble": ".ensemble",
        "MonitorInputs": ".options",
        "MonitorOptions": ".options",
        "alert_folder": ".alert",
        "audit_monitor": ".audit",
        "check_reference": ".audit",
        "window_context": ".reuse",
    },
)
