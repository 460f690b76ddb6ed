"""The built-in SYNTHETIC corpus for the label-source divergence audit (TSS paper, section 5): seeded,
written from templates and word lists in `simulate_divergence_data/`, with a planted divergence between
what human labels reward (style) and what automatic labels reward (topical keywords).

Four data sets cross two platforms (synthetic-forum, synthetic-tweets) with two label sources (human, auto). A
latent distress state s is expressed through style markers only, drawn with a probability that rises with a
latent style intensity z; a topic indicator t decides the stress-topic keywords, linked to s on human data sets
and drawn whatever s on auto ones. The human label is s, the automatic label the keyword rule
(`mentions_stress_topic`), each with an exact share flipped; so DoD > 0 by construction. The data sets, the
generative story and each knob: docs/report.md, "The synthetic label-source corpus".

Everything it writes is marked synthetic: meta {"synthetic": True, ...}, and platform and data-set names
start with 'synthetic'.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np
import pandas as pd

from mhaudit.synthetic import simulate
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.corpus.splits import stratified_assign

CLASSES = ("no_stress", "stress")
DOMAINS = ("work", "money", "health", "family", "social")
DATA = "simulate_divergence_data"

# Marker probabilities (low, high): a post with style intensity z draws each marker with probability
# low + (high - low) * z, per sentence unless noted.
MARKERS: dict[str, tuple[float, float]] = {
    "first_person": (0.35, 0.75),  # per subject / possessive / person slot: "i", "my", "my sister"
    "negation": (0.15, 0.45),  # per verb phrase: the negated form
    "absolutist": (0.01, 0.30),  # an absolutist tail ("like always", "and nothing helped")
    "hedge": (0.05, 0.25),  # a hedge prefix ("maybe", "i guess")
    "fragment": (0.05, 0.35),  # a short fragment instead of a clause sentence
    "fragment_distress": (0.40, 0.70),  # a fragment is a distressed one ("can't sleep"), else calm ("anyway")
    "two_clauses": (0.60, 0.20),  # a clause sentence has a second, balanced clause
    "run_on": (0.02, 0.20),  # a clause sentence runs on with "and ... and"
    "ellipsis": (0.02, 0.35),  # the sentence ends in "..."
    "exclaim": (0.01, 0.10),  # the sentence ends in "!!"
    "emotion_distress": (0.30, 0.70),  # an emotion slot takes a distressed word, else a calm one
    "lowercase": (0.10, 0.65),  # the sentence stays lower case (else a capital start and "I")
}

# Sentences per post: 1 + Poisson(mean - 1), capped; forum posts also get an opener / closer sometimes.
REGISTERS: dict[str, dict] = {
    "forum": {"sentences": 7.0, "cap": 14, "frame": 0.3},
    "tweets": {"sentences": 2.0, "cap": 4, "frame": 0.0},
}

SLOT = re.compile(r"\{([SPODLTKAE])\}")
VERB = re.compile(r"\[([^/\]]+)/([^\]]+)\]")
PLURAL_WAS = re.compile(r"\b(we|they) was(?=n't\b|\b)")  # "they wasn't" -> "they weren't"
NAMES = re.compile(r"\b(sam|alex|priya|tom|jess)\b")


@dataclass(frozen=True)
class DivergenceConfig:
    """Sizes, seed and label probabilities of the SYNTHETIC corpus with human and automatic labels."""

    n_forum: int = 1500
    n_tweets_gold: int = 600
    n_tweets_auto: int = 600
    n_forum_auto: int = 600
    seed: int = 0
    distress_rate: float = 0.5  # P(s = 1)
    topic_given_stress: float = 0.70  # human data sets: P(t = 1 | s = 1)
    topic_given_calm: float = 0.30  # human data sets: P(t = 1 | s = 0)
    auto_topic_rate: float | None = 0.5  # auto data sets: P(t = 1), independent of s; None: as human
    keyword_share: float = 0.6  # t = 1: share of topic slots filled with a stress keyword (at least one)
    auto_keyword_share: float = 1.0  # the same on auto data sets: harvested posts name the topic densely
    auto_mentions: int = 4  # auto data sets: at least this many keyword mentions in a t = 1 post
    hashtag_rate: float = 0.3  # tweets: P(a topical hashtag at the end), a stress-topic one iff t = 1
    auto_hashtag_rate: float = 1.0  # the same on auto tweets (harvested by hashtag)
    casual_spelling: float = 0.7  # tweets: P(apostrophes dropped: "cant", "didnt"), whatever s
    style_contrast: float = 0.40  # distance between the mean style intensities of s = 1 and s = 0
    style_concentration: float = 8.0  # Beta concentration of the style intensity (higher: less overlap)
    human_noise: float = 0.05  # exact share of flipped human labels per data set
    auto_noise: float = 0.05  # exact share of auto labels that disagree with the keyword rule
    test_fraction: float = 1 / 3  # synthetic_forum: stratified share in split 'test', the rest 'train'

    def __post_init__(self):
        for name, value in asdict(self).items():
            if isinstance(value, float) and name != "style_concentration" and not 0 <= value <= 1:
                raise ValueError(f"DivergenceConfig.{name} = {value} must lie in [0, 1]")
        if min(self.n_forum, self.n_tweets_gold, self.n_tweets_auto, self.n_forum_auto) < 0:
            raise ValueError("data-set sizes must not be negative")
        if not 0 < self.test_fraction < 1 or self.style_concentration <= 0:
            raise ValueError("test_fraction must lie in (0, 1) and style_concentration be positive")


@cache
def _lists() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """(clause templates, {section: entries}) from the data folder."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []  # the file starts with a [section]
    for line in simulate.word_list("words", DATA):
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        else:
            current.append(line)
    return simulate.word_list("clauses", DATA), {k: tuple(v) for k, v in sections.items()}


def word_list(name: str) -> tuple[str, ...]:
    """One section of `simulate_divergence_data/words.txt` (e.g. 'topic_noun_stress', 'domain_work')."""
    return _lists()[1][name]


def clause_templates() -> tuple[str, ...]:
    return _lists()[0]


@cache
def _keywords() -> tuple[frozenset[str], re.Pattern]:
    entries = [e for section in ("topic_noun_stress", "topic_adj_stress") for e in word_list(section)]
    words = {e for e in entries if " " not in e}  # every phrase holds one of these ("under pressure")
    if not all(set(e.split()) & words for e in entries):
        raise ValueError("every stress-topic phrase must contain a one-word stress-topic entry")
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b", re.IGNORECASE)
    return frozenset(words), pattern


def stress_keywords() -> frozenset[str]:
    """The stress-topic keywords: the automatic labeller's vocabulary."""
    return _keywords()[0]


def mentions_stress_topic(text: str) -> bool:
    """The automatic keyword rule: does the text contain a stress-topic keyword (whole word, any case)?"""
    return _keywords()[1].search(text) is not None


@dataclass(frozen=True)
class _Topic:
    """How a data set's t = 1 posts name the topic."""

    keyword_share: float  # share of topic slots given a stress keyword
    mentions: int  # at least this many keyword mentions per post
    hashtag_rate: float  # tweets: P(a topical hashtag)


class _Writer:
    """Writes posts; all randomness comes from the generator it is given."""

    def __init__(self, config: DivergenceConfig, rng: np.random.Generator):
        self.cfg, self.rng = config, rng
        self.topic = _Topic(config.keyword_share, 1, config.hashtag_rate)  # set per data set
        self.templates = clause_templates()
        self.topic_templates = tuple(t for t in self.templates if "{K}" in t or "{A}" in t)

    def _pick(self, items):
        return items[self.rng.integers(len(items))]

    def _yes(self, marker: str, z: float) -> bool:
        lo, hi = MARKERS[marker]
        return bool(self.rng.random() < lo + (hi - lo) * z)

    def _clause(self, z: float, t: bool, domain: str, state: dict, force_topic: bool = False) -> str:
        template = self._pick(self.topic_templates if force_topic else self.templates)

        def fill(m: re.Match) -> str:
            slot = m.group(1)
            if slot in "SPO":
                person = {"S": "subject", "P": "possessive", "O": "person"}[slot]
                return self._pick(word_list(f"{person}_{'first' if self._yes('first_person', z) else 'other'}"))
            if slot in "DLT":
                return self._pick(word_list({"D": f"domain_{domain}", "L": f"place_{domain}", "T": "time"}[slot]))
            if slot == "E":
                return self._pick(word_list("emotion_distress" if self._yes("emotion_distress", z) else "emotion_calm"))
            kind = "noun" if slot == "K" else "adj"
            stress = t and (force_topic or self.rng.random() < self.topic.keyword_share)
            if stress:
                state["keywords"] += 1
            return self._pick(word_list(f"topic_{kind}_{'stress' if stress else 'other'}"))

        text = SLOT.sub(fill, template)
        negate = self._yes("negation", z)
        text = VERB.sub(lambda m: m.group(2) if negate else m.group(1), text)
        return PLURAL_WAS.sub(lambda m: m.group(1) + " were", text)

    def _sentence(self, z: float, t: bool, domain: str, state: dict, force_topic: bool = False) -> str:
        if not force_topic and self._yes("fragment", z):
            body = self._pick(word_list("fragment_distress" if self._yes("fragment_distress", z) else "fragment_calm"))
        else:
            body = self._clause(z, t, domain, state, force_topic)
            if self._yes("run_on", z):
                for _ in range(1 + self.rng.integers(2)):
                    body += " and " + self._clause(z, t, domain, state)
            elif self._yes("two_clauses", z):
                body += ", " + self._pick(word_list("connective")) + " " + self._clause(z, t, domain, state)
            if self._yes("absolutist", z):
                body += ", " + self._pick(word_list("absolutist_tail"))
            if self._yes("hedge", z):
                body = self._pick(word_list("hedge")) + " " + body
        if self._yes("ellipsis", z):
            end = "..."
        elif self._yes("exclaim", z):
            end = "!!"
        else:
            end = "!" if self.rng.random() < 0.04 else "."
        return body + end

    def post(self, z: float, t: bool, domain: str, register: str) -> str:
        """One post; with t, at least `topic.mentions` keyword mentions (at most one per sentence forced)."""
        spec = REGISTERS[register]
        n = min(1 + int(self.rng.poisson(spec["sentences"] - 1)), spec["cap"])
        drafts = []  # (sentence, its keyword mentions)
        for _ in range(n):
            state = {"keywords": 0}
            drafts.append((self._sentence(z, t, domain, state), state["keywords"]))
        if t:
            for i in self.rng.permutation(n):
                if sum(k for _, k in drafts) >= self.topic.mentions:
                    break
                if drafts[i][1] == 0:  # a sentence without a keyword becomes one with
                    state = {"keywords": 0}
                    drafts[i] = (self._sentence(z, t, domain, state, force_topic=True), state["keywords"])
        sentences = [x for x, _ in drafts]
        if self.rng.random() < spec["frame"]:
            sentences.insert(0, self._pick(word_list("opener")) + ".")
        if self.rng.random() < spec["frame"]:
            sentences.append(self._pick(word_list("closer")) + ".")
        if register == "tweets" and self.rng.random() < self.topic.hashtag_rate:
            sentences.append(self._pick(word_list("hashtag_stress" if t else "hashtag_other")))
        text = " ".join(x if self._yes("lowercase", z) else _sentence_case(x) for x in sentences)
        if register == "tweets" and self.rng.random() < self.cfg.casual_spelling:
            text = text.replace("'", "")
        return text


def _sentence_case(text: str) -> str:
    """Capitalise sentence starts, the pronoun 'i' (and its contractions) and first names."""
    text = re.sub(r"\bi\b(?=[\s,.!']|$)", "I", text)
    text = NAMES.sub(lambda m: m.group(1).capitalize(), text)
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def _flip(labels: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Exactly round(share * n) of the 0/1 labels flipped, chosen at random."""
    out = labels.copy()
    flip = rng.choice(len(out), size=int(round(share * len(out))), replace=False)
    out[flip] = 1 - out[flip]
    return out


def _dataset(
    name: str, register: str, source: str, n: int, config: DivergenceConfig, writer: _Writer, rng: np.random.Generator
) -> pd.DataFrame:
    cfg, human = config, source == "human"
    s = (rng.random(n) < cfg.distress_rate).astype(int)
    if human or cfg.auto_topic_rate is None:
        p_topic = np.where(s == 1, cfg.topic_given_stress, cfg.topic_given_calm)
    else:
        p_topic = np.full(n, cfg.auto_topic_rate)
    t = rng.random(n) < p_topic
    mean = np.where(s == 1, 1 + cfg.style_contrast, 1 - cfg.style_contrast) / 2
    z = rng.beta(cfg.style_concentration * mean, cfg.style_concentration * (1 - mean))
    domains = np.array(DOMAINS)[rng.integers(len(DOMAINS), size=n)]
    writer.topic = (
        _Topic(cfg.keyword_share, 1, cfg.hashtag_rate)
        if human
        else _Topic(cfg.auto_keyword_share, cfg.auto_mentions, cfg.auto_hashtag_rate)
    )
    texts = [writer.post(float(z[i]), bool(t[i]), str(domains[i]), register) for i in range(n)]
    if human:
        y = _flip(s, cfg.human_noise, rng)
    else:
        y = _flip(np.array([int(mentions_stress_topic(x)) for x in texts]), cfg.auto_noise, rng)
    labels = np.array(CLASSES)[y]
    return pd.DataFrame(
        {
            "id": [f"{name.removeprefix('synthetic_')}-{i:05d}" for i in range(n)],
            "text": texts,
            "label": labels,
            "platform": f"synthetic-{register}",
            "dataset": name,
            "split": "test",
            "label_source": source,
            "domain": domains,
            "lang": "en",
            "raw_label": labels,
        }
    )


def simulate_divergence(config: DivergenceConfig = DivergenceConfig()) -> Corpus:
    """Generate the synthetic divergence corpus (seeded): see the module docstring for the story."""
    rng = np.random.default_rng(config.seed)
    writer = _Writer(config, rng)
    datasets = (
        ("synthetic_forum", "forum", "human", config.n_forum),
        ("synthetic_tweets_gold", "tweets", "human", config.n_tweets_gold),
        ("synthetic_tweets_auto", "tweets", "auto", config.n_tweets_auto),
        ("synthetic_forum_auto", "forum", "auto", config.n_forum_auto),
    )
    frame = pd.concat(
        [_dataset(name, register, source, n, config, writer, rng) for name, register, source, n in datasets if n > 0],
        ignore_index=True,
    )
    forum = frame["dataset"] == "synthetic_forum"
    if forum.any():
        frame.loc[forum, "split"] = stratified_assign(
            frame.loc[forum, "label"], {"train": 1 - config.test_fraction, "test": config.test_fraction}, config.seed
        )
    meta = {
        "synthetic": True,
        "source": "mhaudit.synthetic.simulate_divergence",
        "mapping": "synthetic",
        "simulation": asdict(config),
    }
    return Corpus.build(frame, list(CLASSES), meta=meta)
