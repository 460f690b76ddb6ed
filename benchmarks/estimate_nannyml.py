"""NannyML's CBPE on the predictions of benchmarks/estimate_transfer.py; run with NannyML's own interpreter.

    NML_DISABLE_USAGE_LOGGING=1 /path/to/nannyml-venv/bin/python benchmarks/estimate_nannyml.py PREDICTIONS OUT

Reference: the home test rows (labels); analysis: each target's rows as one chunk. NannyML fits its own
calibration on the reference (its default). Its band is the estimate +/- 3 sampling errors; for a 95%
interval like ours this uses +/- 1.96 sampling errors. NannyML's binary F1 is the positive class's, so for
two classes it runs twice, once per class as the positive one, and macro-F1 is the mean of the two (its
interval the mean of the two intervals, an approximation). Writes one row per pair and metric.
"""

import os
import sys

os.environ.setdefault("NML_DISABLE_USAGE_LOGGING", "1")

import nannyml as nml  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

METRICS = {"accuracy": "accuracy", "f1": "macro_f1", "roc_auc": "macro_auc"}


def frame(block: pd.DataFrame, classes: list[str], labelled: bool, positive: int = 1) -> pd.DataFrame:
    z = block[[f"logit_{c}" for c in classes]].to_numpy(float)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    out = pd.DataFrame({f"p_{c}": p[:, i] for i, c in enumerate(classes)})
    out["y_pred"] = np.asarray(classes, dtype=object)[p.argmax(axis=1)]
    if len(classes) == 2:  # binary: NannyML wants 0/1 predictions and one positive-class probability
        out["y_pred"] = (out["y_pred"] == classes[positive]).astype(int)
    if labelled:
        out["y_true"] = (block["label"].to_numpy() if len(classes) > 2
                         else (block["label"] == classes[positive]).astype(int).to_numpy())
    return out


def _run(ref, tgt, classes, positive: int = 1) -> pd.DataFrame:
    binary = len(classes) == 2
    proba = f"p_{classes[positive]}" if binary else {c: f"p_{c}" for c in classes}
    cbpe = nml.CBPE(y_pred_proba=proba, y_pred="y_pred", y_true="y_true", metrics=list(METRICS),
                    problem_type="classification_binary" if binary else "classification_multiclass",
                    chunk_number=1)
    cbpe.fit(frame(ref, classes, True, positive))
    return cbpe.estimate(frame(tgt, classes, False, positive)).filter(period="analysis").to_df()


def _value(result: pd.DataFrame, name: str) -> tuple[float, float, float]:
    value, se = float(result[(name, "value")].iloc[0]), float(result[(name, "sampling_error")].iloc[0])
    return value, value - 1.96 * se, value + 1.96 * se


def estimate(ref: pd.DataFrame, tgt: pd.DataFrame, classes: list[str]) -> list[dict]:
    result = _run(ref, tgt, classes)
    rows = []
    for name, ours in METRICS.items():
        value = _value(result, name)
        if name == "f1" and len(classes) == 2:  # macro-F1: the mean of each class's F1 as the positive one
            value = tuple((a + b) / 2 for a, b in zip(value, _value(_run(ref, tgt, classes, positive=0), name)))
        rows.append({"metric": ours, "estimate": value[0], "ci_low": value[1], "ci_high": value[2]})
    return rows


def main(path: str, out: str) -> None:
    preds = pd.read_parquet(path)
    rows = []
    for (source, model), block in preds.groupby(["source", "model"], sort=True):
        classes = block["classes"].iat[0].split(",")
        ref = block[block["role"] == "reference"]
        for target, tgt in block[block["role"] == "target"].groupby("target"):
            rows += [{"source": source, "target": target, "model": model, **r} for r in estimate(ref, tgt, classes)]
            print(f"nannyml {model} {source} -> {target}", flush=True)
    pd.DataFrame(rows).to_parquet(out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
