"""mhaudit: audit mental-health text classifiers across platforms and label sources.

The public Python API (docs/api.md)::

    import mhaudit as mh
    result = mh.audit_cpfe(mh.CPFEInputs(mh.read_predictions(["preds.csv"])), mh.CPFEOptions(reference="reddit"))
    mh.write_report(result, "report/")

Names are loaded on first use, so `import mhaudit` (and `mhaudit --help`) stays cheap.
"""

from __future__ import annotations

from mhaudit.core.lazy import lazy_names

__version__ = "0.1.0"

# each public name loads from its module when first used (PEP 562)
_PUBLIC_BY_MODULE = {
    # readers
    "mhaudit.tables.corpus.schema": ("read_corpus", "Corpus"),
    "mhaudit.tables.prediction_files": ("read_predictions", "predictions_from_arrays"),
    "mhaudit.tables.label_store": ("read_labels",),
    "mhaudit.tables.attributions": ("read_attributions",),
    "mhaudit.tables.predictions": ("PredictionSet", "predict_corpus"),
    # audits, their inputs and options
    "mhaudit.audits": ("AUDITS",),
    "mhaudit.audits.cpfe": ("audit_cpfe", "CPFEInputs", "CPFEOptions"),
    "mhaudit.audits.divergence": ("audit_divergence", "DivergenceInputs", "DivergenceOptions"),
    "mhaudit.audits.estimate": ("audit_estimate", "EstimateInputs", "EstimateOptions"),
    "mhaudit.stats.pair_estimate": ("TrustOptions",),  # the estimate's and the monitor's cut-offs
    "mhaudit.audits.certify": ("audit_certify", "CertifyInputs", "CertifyOptions"),
    "mhaudit.tables.certification_sample": ("certification_sample",),
    "mhaudit.tables.sample_design": ("pool_of",),
    "mhaudit.audits.monitor": ("audit_monitor", "MonitorOptions", "MonitorInputs", "MonitorEnsemble"),
    "mhaudit.experiments.monitor_round": ("load_deployment", "load_reference", "monitor_round", "acknowledge_alerts"),
    "mhaudit.experiments.monitor_service": ("run_monitor", "MonitorService"),
    "mhaudit.audits.agreement": ("audit_agreement", "AgreementInputs", "AgreementOptions"),
    "mhaudit.audits.model_selection": ("audit_model_selection", "ModelSelectionInputs", "ModelSelectionOptions"),
    # results, reports, progress
    "mhaudit.report": ("AuditResult", "write_report"),
    "mhaudit.core.progress": ("Progress",),
    "mhaudit.core.errors": ("InputError",),
    "mhaudit.stats.undefined": ("UndefinedStatisticWarning",),
    # models (also create_model and register_model, below)
    "mhaudit.models": ("load_model", "save_model"),
    "mhaudit.models.base": ("model_names",),
    # the built-in SYNTHETIC corpora
    "mhaudit.synthetic.simulate": ("simulate", "SimulationConfig"),
    "mhaudit.synthetic.simulate_divergence": ("simulate_divergence", "DivergenceConfig"),
    "mhaudit.synthetic.simulate_scores": ("simulate_scores",),
    "mhaudit.synthetic.simulate_stream": ("simulate_stream", "StreamConfig"),
}
_names, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        **{name: module for module, names in _PUBLIC_BY_MODULE.items() for name in names},
        "create_model": "mhaudit.models:create",
        "register_model": "mhaudit.models:register",
    },
)
__all__ = ["__version__", *_names]
