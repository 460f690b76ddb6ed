"""Fit a scikit-learn text pipeline the way researchers do (TF-IDF, then logistic regression, integer 0/1 labels
as data sets publish them) and save it with skops, the ecosystem's secure format (no mhaudit involved).

mhaudit then audits the saved file as it is, its 0/1 classes named by a shipped mapping (docs/models.md):

    python examples/outside_models/fit_skops.py --corpus reddit.parquet --positive depression --out lr.skops
    mhaudit predict --model lr.skops --mapping depression-binary --corpus corpus.parquet --out preds.parquet
"""

from __future__ import annotations

import argparse

import pandas as pd
import skops.io
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="Table with text, label and split columns.")
    parser.add_argument("--positive", required=True, help="The label value of class 1.")
    parser.add_argument("--out", required=True, help="The .skops file to write.")
    parser.add_argument("--split", default="train")
    args = parser.parse_args()
    frame = pd.read_parquet(args.corpus) if args.corpus.endswith(".parquet") else pd.read_csv(args.corpus)
    rows = frame[frame["split"] == args.split].dropna(subset=["text", "label"])
    labels = (rows["label"] == args.positive).astype(int)  # 0/1, as the data set published them
    pipeline = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True), LogisticRegression())
    pipeline.fit(rows["text"].astype(str), labels)
    skops.io.dump(pipeline, args.out)
    print(f"fitted on {len(rows):,} '{args.split}' rows ({labels.mean():.1%} class 1); saved to {args.out}")


if __name__ == "__main__":
    main()
