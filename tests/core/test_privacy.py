import pandas as pd

from mhaudit.core.privacy import pseudonymise
from mhaudit.tables.corpus.importing import ImportOptions, import_source


def test_pseudonyms_are_keyed_stable_and_hide_the_raw_id():
    a = pseudonymise(["did:plc:alice", "did:plc:bob", "did:plc:alice", None], secret=b"k1")
    assert a[0] == a[2] and a[0] != a[1] and a[3] is None
    assert all(p.startswith("a-") and len(p) == 18 and "alice" not in p for p in a[:3])
    assert pseudonymise(["did:plc:alice"], secret=b"k2")[0] != a[0]


def test_import_pseudonymises_authors_with_the_local_secret(tmp_path, monkeypatch):
    monkeypatch.delenv("MHAUDIT_SECRET", raising=False)
    monkeypatch.setenv("MHAUDIT_SECRET_FILE", str(tmp_path / "cfg" / "secret"))
    src = tmp_path / "posts.csv"
    pd.DataFrame(
        {"text": [f"t{i}" for i in range(20)], "label": [i % 2 for i in range(20)], "author": ["alice", "bob"] * 10}
    ).to_csv(src, index=False)
    frame = import_source("generic", [src], ImportOptions(platform="p", split="test")).corpus.frame
    assert (tmp_path / "cfg" / "secret").stat().st_mode & 0o777 == 0o600
    assert set(frame["author"]) == set(pseudonymise(["alice", "bob"]))
    assert not frame["author"].isin(["alice", "bob"]).any()


def test_a_short_secret_is_refused(monkeypatch, tmp_path):
    import pytest

    from mhaudit.core.errors import InputError

    monkeypatch.setenv("MHAUDIT_SECRET", "short")
    with pytest.raises(InputError, match="needs at least 16"):
        pseudonymise(["x"])
    monkeypatch.delenv("MHAUDIT_SECRET")
    (tmp_path / "secret").write_text("")
    monkeypatch.setenv("MHAUDIT_SECRET_FILE", str(tmp_path / "secret"))
    with pytest.raises(InputError, match="holds 0 bytes"):
        pseudonymise(["x"])
    assert pseudonymise(pd.Series(["a", pd.NA], dtype="string"), secret=b"k" * 16)[1] is None
