"""The options of the cross-platform audit, checked when they are made: a bad value fails before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError


@dataclass(frozen=True)
class CPFEOptions:
    reference: str  # the models' home platform (or data set): every other platform is compared with it
    n_bins: int = 10
    n_boot_ece: int = 1000
    n_boot_significance: int = 2000
    # When every group has at least this many rows, the macro-AUC's SE (significance axis) comes from DeLong's
    # placement values (stats.macro_delong, O(n log n)) instead of the n_boot_significance resamples, which
    # at 1M rows cost minutes and agree with it to about 1% (docs/cpfe.md)
    delong_min_rows: int = 100_000
    seed: int = 0
    calibration_fraction: float = 0.10
    crossfit_folds: int = 5
    correction: str = "bonferroni"  # or "bh"
    alpha: float = 0.05
    max_tokens: int = 64
    top_ks: tuple[int, ...] = (5, 10, 15, 20)
    non_independent: tuple[tuple[str, str], ...] = ()  # (model, platform or data set) the model saw in training
    figures: bool = True

    def __post_init__(self) -> None:
        problems = [
            (bool(str(self.reference).strip()), "reference must name the models' home platform or data set"),
            (self.correction in ("bonferroni", "bh"), f"correction '{self.correction}' must be 'bonferroni' or 'bh'"),
            (self.n_bins >= 1, f"n_bins {self.n_bins} must be at least 1"),
            (self.n_boot_ece >= 2, f"n_boot_ece {self.n_boot_ece} must be at least 2"),
            (self.n_boot_significance >= 2, f"n_boot_significance {self.n_boot_significance} must be at least 2"),
            (self.delong_min_rows >= 1, f"delong_min_rows {self.delong_min_rows} must be at least 1"),
            (0 < self.calibration_fraction < 1,
             f"calibration_fraction {self.calibration_fraction} must lie strictly between 0 and 1"),
            (self.crossfit_folds >= 2, f"crossfit_folds {self.crossfit_folds} must be at least 2"),
            (0 < self.alpha < 1, f"alpha {self.alpha} must lie strictly between 0 and 1"),
            (self.max_tokens >= 1, f"max_tokens {self.max_tokens} must be at least 1"),
            (all(k >= 1 for k in self.top_ks), f"top_ks {self.top_ks} must be positive"),
            (all(len(p) == 2 for p in self.non_independent),
             "non_independent must hold (model, platform) pairs"),
        ]
        for ok, message in problems:
            if not ok:
                raise InputError(message)

    def macro_auc_method(self, sizes) -> str:
        """'DeLong' when every group (of these row counts) reaches delong_min_rows, else 'bootstrap'."""
        return "DeLong" if all(n >= self.delong_min_rows for n in sizes) else "bootstrap"
