"""Label-source audit (TSS probe): do human and automatic labels reward different evidence?

Channels A (lexical), B (morpho-syntax) and C (style) and their combinations are fitted on one human
training set and scored on human- and auto-labelled data sets; the Degree of Divergence
DoD_{X-A} = mean_human[F1(X) - F1(A)] - mean_auto[F1(X) - F1(A)] says how much more a label source
rewards channel X over the lexicon. See docs/divergence.md for every definition and choice.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "DivergenceInputs": ".options",
        "DivergenceOptions": ".options",
        "audit_divergence": ".audit",
    },
)
