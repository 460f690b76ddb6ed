import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from mhaudit.tables.corpus.dedup import decontaminate, deduplicate, normalise


def frame(texts, labels, dataset="d", split="train"):
    return pd.DataFrame({"id": range(len(texts)), "text": texts, "label": labels, "dataset": dataset, "split": split})


def test_duplicates_and_conflicts_are_counted():
    df = frame(["Hello  world", "hello world", "HELLO WORLD\n", "sad", "Sad ", "other"], ["x", "x", "x", "x", "y", "z"])
    out, report = deduplicate(df)
    assert out["text"].tolist() == ["Hello  world", "other"]
    assert (report.duplicate_rows_removed, report.conflicting_texts, report.conflicting_rows_removed) == (2, 1, 2)
    kept, report = deduplicate(df, drop_conflicting=False)
    assert kept["text"].tolist() == ["Hello  world", "sad", "other"]
    assert report.conflicting_rows_removed == 1  # the extra copy of the conflicting text


def test_texts_shared_between_data_sets_or_splits_are_not_duplicates():
    df = pd.concat(
        [frame(["a b"], ["x"], "gold"), frame(["A  b"], ["y"], "auto"), frame(["a b"], ["x"], "gold", "test")],
        ignore_index=True,
    )
    out, report = deduplicate(df)
    assert len(out) == 3 and report.conflicting_texts == 0


def test_decontamination_removes_evaluation_texts_from_the_pool():
    train = frame(["keep me", "Leak ed", "also keep"], ["x", "y", "x"])
    kept, removed = decontaminate(train, [frame(["leak  ED"], ["x"]), frame(["unrelated"], ["y"])])
    assert kept["text"].tolist() == ["keep me", "also keep"] and removed == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "A ", "b", " B", "c"]), st.sampled_from("xy")), min_size=1, max_size=25)
)
def test_matches_brute_force(rows):
    df = frame([t for t, _ in rows], [lab for _, lab in rows])
    out, report = deduplicate(df)
    norm = [" ".join(t.lower().split()) for t, _ in rows]
    labels_of = {}
    for n, (_, lab) in zip(norm, rows):
        labels_of.setdefault(n, set()).add(lab)
    expected, seen = [], set()
    for i, n in enumerate(norm):
        if len(labels_of[n]) == 1 and n not in seen:
            expected.append(i)
        seen.add(n)
    assert out.index.tolist() == expected
    assert report.conflicting_texts == sum(len(v) > 1 for v in labels_of.values())
    assert normalise(pd.Series(["  A\tB "])).iat[0] == "a b"
