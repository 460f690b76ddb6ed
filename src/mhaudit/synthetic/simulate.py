"""The built-in SYNTHETIC multi-platform corpus: seeded, written from templates and word lists in
`simulate_data/`, with every distribution shift a knob in [0, 1] (0 = switched off) so tests know the ground
truth; docs/report.md ("The synthetic corpus") lists the platforms, classes and knobs. The shortcut marker (a
forum flair, a comment badge, a tweet hashtag) names the true class with probability `shortcut`, else a random
class.

Everything it writes is marked synthetic: platform and data-set names start with 'synthetic'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.corpus.splits import assign_splits

CLASSES = ("normal", "depression", "anxiety", "stress")
REGISTERS = ("forum", "comments", "tweets")
SLOT = re.compile(r"\{([cnr])\}")


@dataclass(frozen=True)
class PlatformSpec:
    register: str  # one of REGISTERS: template style, register words, vocabulary third
    sentences: float  # mean sentences per post
    priors: tuple[float, float, float, float]  # over CLASSES
    markers: tuple[str, str, str, str]  # shortcut token per class

    @property
    def name(self) -> str:
        return f"synthetic-{self.register}"


PLATFORMS = (
    PlatformSpec("forum", 7.0, (0.25, 0.40, 0.17, 0.18), ("flairchat", "flairvent", "flairworry", "flairrant")),
    PlatformSpec("comments", 1.4, (0.62, 0.14, 0.12, 0.12), ("badgeblue", "badgegreen", "badgegold", "badgered")),
    PlatformSpec("tweets", 1.0, (0.44, 0.30, 0.12, 0.14), ("#nowplaying", "#longday", "#thoughts", "#grind")),
)


@dataclass(frozen=True)
class SimulationConfig:
    """Sizes, seed and shift strengths of the built-in SYNTHETIC multi-platform corpus."""

    n_per_platform: int = 2000
    seed: int = 0
    reference: str = "forum"  # the register every shift is measured from
    label_shift: float = 1.0
    covariate_shift: float = 1.0
    vocabulary_shift: float = 0.8
    shortcut: float = 0.8
    class_signal: float = 0.45  # share of content slots drawn from the post's own class (rest: any class)
    auto_noise: float = 0.20
    auto_platforms: tuple[str, ...] = ("tweets",)
    platforms: tuple[PlatformSpec, ...] = field(default=PLATFORMS)

    @classmethod
    def no_shift(cls, **overrides) -> SimulationConfig:
        """Every shift switched off: all platforms draw from the reference platform's distribution."""
        return replace(cls(label_shift=0.0, covariate_shift=0.0, vocabulary_shift=0.0, shortcut=0.0), **overrides)


@cache
def word_list(name: str, folder: str = "simulate_data") -> tuple[str, ...]:
    """The entries of the packaged list `<folder>/<name>.txt`: its lines, without blank lines and '# ' comments."""
    text = (resources.files("mhaudit.synthetic") / folder / f"{name}.txt").read_text("utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("# "))


def _vocabulary_thirds(rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Each class vocabulary cut into three fixed, disjoint thirds, one preferred by each register."""
    words = {cls: np.array(word_list(f"class_{cls}")) for cls in CLASSES}
    return {cls: np.array_split(w[rng.permutation(len(w))], len(REGISTERS)) for cls, w in words.items()}


def _mix(ref, own, amount: float) -> np.ndarray:
    return (1 - amount) * np.asarray(ref, float) + amount * np.asarray(own, float)


class _Writer:
    """Writes posts for one platform; all randomness comes from the generator it is given."""

    def __init__(
        self,
        spec: PlatformSpec,
        ref: PlatformSpec,
        config: SimulationConfig,
        thirds: dict[str, list[np.ndarray]],
        rng: np.random.Generator,
    ):
        self.spec, self.ref, self.cfg, self.thirds, self.rng = spec, ref, config, thirds, rng
        s = config.covariate_shift
        self.sentences = float(_mix(ref.sentences, spec.sentences, s))
        self.register_mix = s  # probability a sentence uses this platform's own style
        own = REGISTERS.index(spec.register)
        p_own = 1 / 3 + config.vocabulary_shift * 2 / 3
        self.third_probs = np.full(3, (1 - p_own) / 2)
        self.third_probs[own] = p_own
        self.neutral = np.array(word_list("neutral"))

    def _style(self) -> str:
        return self.spec.register if self.rng.random() < self.register_mix else self.ref.register

    def _class_word(self, cls: str) -> str:
        if self.rng.random() >= self.cfg.class_signal:  # a word of any class: the text stays ambiguous
            cls = CLASSES[self.rng.integers(len(CLASSES))]
        third = self.thirds[cls][self.rng.choice(3, p=self.third_probs)]
        return str(third[self.rng.integers(len(third))])

    def post(self, cls: str) -> str:
        n_sentences = 1 + self.rng.poisson(max(self.sentences - 1, 0.0))
        parts = []
        for _ in range(n_sentences):
            style = self._style()
            templates = word_list(f"templates_{style}")
            register = word_list(f"register_{style}")
            template = templates[self.rng.integers(len(templates))]
            fill = {
                "c": lambda: self._class_word(cls),
                "n": lambda: str(self.neutral[self.rng.integers(len(self.neutral))]),
                "r": lambda: register[self.rng.integers(len(register))],
            }
            parts.append(SLOT.sub(lambda m: fill[m.group(1)](), template))
        if self.cfg.shortcut > 0:
            marker_cls = cls if self.rng.random() < self.cfg.shortcut else CLASSES[self.rng.integers(4)]
            parts.append(self.spec.markers[CLASSES.index(marker_cls)])
        return " ".join(parts)


def simulate(config: SimulationConfig = SimulationConfig()) -> Corpus:
    """Generate the synthetic corpus (seeded); splits are stratified 70/15/15 per data set."""
    rng = np.random.default_rng(config.seed)
    thirds = _vocabulary_thirds(rng)
    by_register = {p.register: p for p in config.platforms}
    ref = by_register[config.reference]
    frames = []
    for spec in config.platforms:
        writer = _Writer(spec, ref, config, thirds, rng)
        priors = _mix(ref.priors, spec.priors, config.label_shift)
        labels = rng.choice(CLASSES, size=config.n_per_platform, p=priors / priors.sum())
        frames.append(
            pd.DataFrame(
                {
                    "id": [f"{spec.register}-{i:06d}" for i in range(config.n_per_platform)],
                    "text": [writer.post(c) for c in labels],
                    "label": labels,
                    "platform": spec.name,
                    "dataset": f"synthetic_{spec.register}",
                    "split": None,
                    "label_source": "synthetic-true",
                    "lang": "en",
                    "raw_label": labels,
                }
            )
        )
    human = assign_splits(pd.concat(frames, ignore_index=True), seed=config.seed)
    autos = [
        _auto_labels(human[human["platform"] == by_register[r].name], config.auto_noise, rng)
        for r in config.auto_platforms
    ]
    frame = pd.concat([human, *autos], ignore_index=True)
    meta = {
        "synthetic": True,
        "source": "mhaudit.synthetic.simulate",
        "mapping": "synthetic",
        "simulation": {k: v for k, v in vars(config).items() if k != "platforms"},
    }
    return Corpus.build(frame, list(CLASSES), meta=meta)


def _auto_labels(rows: pd.DataFrame, noise: float, rng: np.random.Generator) -> pd.DataFrame:
    """A second label source for the same texts: exactly round(noise * n) labels replaced by another class."""
    n_flip = int(round(noise * len(rows)))
    flip = rng.choice(len(rows), size=n_flip, replace=False)
    labels = rows["label"].to_numpy().copy()
    shift = rng.integers(1, len(CLASSES), size=n_flip)  # never the true class
    index = np.array([CLASSES.index(c) for c in labels[flip]])
    labels[flip] = np.array(CLASSES)[(index + shift) % len(CLASSES)]
    return rows.assign(
        label=labels, id="auto-" + rows["id"], dataset=rows["dataset"] + "_auto", label_source="synthetic-auto"
    )
