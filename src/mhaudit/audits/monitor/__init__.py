"""Monitor a deployed classifier on the collected stream (docs/monitor.md).

`audit_monitor` is a function of the scored posts (weak_supervision.collect.scores.scored_posts: each post's
time, length, languages, categories and scores, never its text), the model's predictions on the labelled
sample it was validated on, and the model's name, digest and classes. It analyses the posts window by window
(audits.monitor.windows). Verdict rows name the windows that cross a threshold: the score distribution's PSI
against the reference (warn at 0.10, fail at 0.25) and the change detector's alarms. On an alert, the latest
alerting window's posts get a suggested validation sample in the result's outputs (audits.monitor.alert): post
ids, strata and design weights as `mhaudit labels sample --strategy estimate` draws them, with the window's
predictions, so `mhaudit annotate --store` shows their text from the store and `mhaudit audit certify`
certifies the model there. Scoring the posts comes first (weak_supervision.collect.scoring; `mhaudit audit monitor`
does both). When the deployed model is one run of an ensemble (`MonitorInputs.ensemble`), every window big enough
also gets the deployed run's accuracy from how often the runs agree on its posts (audits.monitor.ensemble).

Outputs carry counts, rates and pseudonymous post ids only: no post text, no DID.
"""

from mhaudit.core.lazy import lazy_names

# each name loads from its module when first used: the command line imports an audit's options alone
__all__, __getattr__, __dir__ = lazy_names(__name__, {
    "AXIS": ".verdicts",
    "MonitorEnsemble": ".ensemble",
    "MonitorInputs": ".options",
    "MonitorOptions": ".options",
    "alert_folder": ".alert",
    "audit_monitor": ".audit",
    "check_reference": ".audit",
    "reference_of": ".audit",
    "window_context": ".reuse",
})
