"""mhaudit: audit mental-health text classifiers across platforms and label sources.

The public Python API (docs/api.md)::

    import mhaudit as mh
    result = mh.audit_cpfe(mh.CPFEInputs(mh.read_predictions(["preds.csv"])), mh.CPFEOptions(reference="reddit"))
    mh.write_report(result, "report/")

Names are loaded on first use, so `import mhaudit` (and `mhaudit --help`) stays cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> (module, attribute)
_PUBLIC = {
    # readers
    "read_corpus": ("mhaudit.tables.corpus.schema", "read_corpus"),
    "read_predictions": ("mhaudit.tables.prediction_files", "read_predictions"),
    "predictions_from_arrays": ("mhaudit.tables.prediction_files", "predictions_from_arrays"),
    "read_labels": ("mhaudit.tables.label_store", "read_labels"),
    "read_attributions": ("mhaudit.tables.attributions", "read_attributions"),
    "Corpus": ("mhaudit.tables.corpus.schema", "Corpus"),
    "PredictionSet": ("mhaudit.tables.predictions", "PredictionSet"),
    # audits and their options
    "audit_cpfe": ("mhaudit.audits.cpfe", "audit_cpfe"),
    "CPFEInputs": ("mhaudit.audits.cpfe", "CPFEInputs"),
    "CPFEOptions": ("mhaudit.audits.cpfe", "CPFEOptions"),
    "audit_divergence": ("mhaudit.audits.divergence", "audit_divergence"),
    "DivergenceInputs": ("mhaudit.audits.divergence", "DivergenceInputs"),
    "DivergenceOptions": ("mhaudit.audits.divergence", "DivergenceOptions"),
    "audit_estimate": ("mhaudit.audits.estimate", "audit_estimate"),
    "EstimateInputs": ("mhaudit.audits.estimate", "EstimateInputs"),
    "EstimateOptions": ("mhaudit.audits.estimate", "EstimateOptions"),
    "TrustOptions": ("mhaudit.stats.pair_estimate", "TrustOptions"),  # the estimate's and the monitor's cut-offs
    "certification_sample": ("mhaudit.tables.certification_sample", "certification_sample"),
    "pool_of": ("mhaudit.tables.sample_design", "pool_of"),
    "audit_certify": ("mhaudit.audits.certify", "audit_certify"),
    "CertifyInputs": ("mhaudit.audits.certify", "CertifyInputs"),
    "CertifyOptions": ("mhaudit.audits.certify", "CertifyOptions"),
    "audit_monitor": ("mhaudit.audits.monitor", "audit_monitor"),
    "MonitorOptions": ("mhaudit.audits.monitor", "MonitorOptions"),
    "MonitorInputs": ("mhaudit.audits.monitor", "MonitorInputs"),
    "MonitorEnsemble": ("mhaudit.audits.monitor", "MonitorEnsemble"),
    "load_deployment": ("mhaudit.experiments.monitor_round", "load_deployment"),
    "monitor_round": ("mhaudit.experiments.monitor_round", "monitor_round"),
    "audit_agreement": ("mhaudit.audits.agreement", "audit_agreement"),
    "AgreementInputs": ("mhaudit.audits.agreement", "AgreementInputs"),
    "AgreementOptions": ("mhaudit.audits.agreement", "AgreementOptions"),
    "audit_model_selection": ("mhaudit.audits.model_selection", "audit_model_selection"),
    "ModelSelectionInputs": ("mhaudit.audits.model_selection", "ModelSelectionInputs"),
    "ModelSelectionOptions": ("mhaudit.audits.model_selection", "ModelSelectionOptions"),
    "AUDITS": ("mhaudit.audits", "AUDITS"),
    # results, reports, progress
    "AuditResult": ("mhaudit.report", "AuditResult"),
    "write_report": ("mhaudit.report", "write_report"),
    "Progress": ("mhaudit.core.progress", "Progress"),
    "InputError": ("mhaudit.core.errors", "InputError"),
    "UndefinedStatisticWarning": ("mhaudit.stats.undefined", "UndefinedStatisticWarning"),
    # models
    "create_model": ("mhaudit.models", "create"),
    "register_model": ("mhaudit.models", "register"),
    "load_model": ("mhaudit.models", "load_model"),
    "save_model": ("mhaudit.models", "save_model"),
    "model_names": ("mhaudit.models.base", "model_names"),
    "predict_corpus": ("mhaudit.tables.predictions", "predict_corpus"),
    # the built-in SYNTHETIC corpora
    "simulate": ("mhaudit.synthetic.simulate", "simulate"),
    "SimulationConfig": ("mhaudit.synthetic.simulate", "SimulationConfig"),
    "simulate_divergence": ("mhaudit.synthetic.simulate_divergence", "simulate_divergence"),
    "simulate_scores": ("mhaudit.synthetic.simulate_scores", "simulate_scores"),
    "DivergenceConfig": ("mhaudit.synthetic.simulate_divergence", "DivergenceConfig"),
    "simulate_stream": ("mhaudit.synthetic.simulate_stream", "simulate_stream"),
    "StreamConfig": ("mhaudit.synthetic.simulate_stream", "StreamConfig"),
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'mhaudit' has no attribute '{name}'")
    module, attribute = _PUBLIC[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
