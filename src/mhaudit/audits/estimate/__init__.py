"""Label-free performance estimation: how good is the model on a platform nobody has labelled yet?

From a model's scores on a labelled reference (its home test set) and on unlabelled targets, estimate each
target's class priors (EM, BBSE), accuracy, macro-F1 and macro-AUC by confidence-based performance
estimation (CBPE), average thresholded confidence (ATC) and difference of confidences (DoC), with bootstrap
CIs, and mark each target trusted or untrusted by a shift diagnostic fixed in advance. docs/estimate.md.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "EstimateInputs": ".options",
        "EstimateOptions": ".options",
        "audit_estimate": ".audit",
    },
)
