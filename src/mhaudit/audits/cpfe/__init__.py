"""The cross-platform five-axis audit (CPFE): predictions in, a AuditResult of tidy tables and figures out.

Works on predictions from any model (ours or imported). Every (model, seed, platform, data set) is
one evaluation group; the reference platform is the models' home. See docs/cpfe.md for every
definition and the choices made where the paper is ambiguous.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    {
        "CPFEInputs": ".options",
        "CPFEOptions": ".options",
        "audit_cpfe": ".audit",
    },
)
