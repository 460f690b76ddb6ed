"""The protocol effect as verdict rows: subject = the model, target = CV protocol vs holdout, per metric scored
against the training labels. A holdout estimate outside CV's mean ± 2 SD over folds warns: the single split
is not a faithful estimate of what cross-validation sees."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report import verdict, verdict_table

METRICS = ("f1", "auc")


def model_selection_verdicts(effect: pd.DataFrame, train_source: str) -> pd.DataFrame:
    rows: list[dict] = []
    if effect.empty:  # one protocol only: nothing to compare
        return verdict_table(rows)
    own = effect[(effect["scored_against"] == train_source) & effect["metric"].isin(METRICS)]
    for _, e in own.iterrows():
        sd = float(e["cv_sd"]) if pd.notna(e["cv_sd"]) else np.nan
        difference = float(e["difference"]) if pd.notna(e["difference"]) else np.nan
        far = np.isfinite(sd) and abs(difference) > 2 * sd
        rows.append(
            verdict(
                "model_selection",
                "protocol",
                e["model"],
                f"{e['cv']} vs {e['holdout']}",
                f"{e['metric']}_cv_minus_holdout",
                difference,
                "|CV mean - holdout| <= 2 SD over CV folds",
                "warn" if far else "pass",
                (
                    f"holdout {e['metric']} lies {abs(difference):.3f} from the CV mean, beyond 2 SD ({2 * sd:.3f})"
                    if far
                    else "holdout within 2 SD of the CV mean"
                    if np.isfinite(sd)
                    else "no SD over folds"
                ),
            )
        )
    return verdict_table(rows)
