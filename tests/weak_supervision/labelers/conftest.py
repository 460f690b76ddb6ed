"""Fixtures for the LLM-label tests: the shared llama.cpp server and ~20 short hand-written posts."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.weak_supervision.labelers import servers

# Written for these tests (not real posts). label: a plausible SI reading, used only as a k-shot pool.
POSTS = [
    ("I want to die. I can't do this anymore.", 1),
    ("New study links social media use to teen depression.", 0),
    ("My sister told me she wants to kill herself and I don't know what to do.", 0),
    ("Had a great day at the beach with the kids!", 0),
    ("Everyone would be better off without me.", 1),
    ("This traffic is killing me lol", 0),
    ("I've been so depressed I can't get out of bed.", 1),
    ("If you are struggling, call or text 988. You are not alone.", 0),
    ("Panic attacks every night this week. I'm exhausted.", 0),
    ("Lovely coffee and a good book this morning.", 0),
    ("I keep thinking about ending it all.", 1),
    ("Suicide prevention month starts today. Check on your friends.", 0),
    ("Cut myself again last night.", 1),
    ("The new album is to die for!", 0),
    ("I don't see any point in living anymore.", 1),
    ("What would you do if the world ended tomorrow?", 0),
    ("My therapist says I'm making progress. Feeling hopeful.", 0),
    ("I wish I could just disappear forever.", 1),
    ("The council voted to fund two new mental health clinics.", 0),
    ("Nobody would even notice if I was gone.", 1),
]


# A separate labelled pool for k-shot examples (stress: 1 = the author says they are stressed).
POOL = [
    ("Deadlines at work are crushing me and I can't sleep.", 1),
    ("Rent is due and I have no idea how I'll pay it. So stressed.", 1),
    ("My exams start Monday and I'm completely overwhelmed.", 1),
    ("Sunny afternoon in the park, feeling relaxed.", 0),
    ("Tips for managing stress: breathe, walk, sleep.", 0),
    ("Finished my puzzle. Nice quiet evening.", 0),
]


@pytest.fixture(scope="session")
def llama_url() -> str:
    """URL of the real llama.cpp server (SmolLM2-135M); skips when llama_cpp is not importable."""
    return servers.llama_server()


@pytest.fixture
def items() -> pd.DataFrame:
    return pd.DataFrame({"id": [f"post-{i:02d}" for i in range(len(POSTS))], "text": [t for t, _ in POSTS]})


@pytest.fixture
def items_csv(tmp_path, items):
    path = tmp_path / "items.csv"
    items.to_csv(path, index=False)
    return path


@pytest.fixture
def pool_csv(tmp_path):
    path = tmp_path / "pool.csv"
    pd.DataFrame(
        {"id": [f"pool-{i}" for i in range(len(POOL))], "text": [t for t, _ in POOL], "label": [y for _, y in POOL]}
    ).to_csv(path, index=False)
    return path
