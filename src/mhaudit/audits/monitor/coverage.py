"""What share of its target the monitored stream can show: the collection filter's measured recall.

The collector keeps only posts its lexicons match, so a monitor of depression on the stream sees only the
depressive posts the filter lets through. The post store records the filters its runs used (lexicon name ->
SHA-256; weak_supervision.lexicons.measured.collection_filters reads them into `MonitorInputs.collection`);
this section quotes each one's recall on the Bluesky depression set from the packaged table
(benchmarks/lexicon_recall.py), or says that a custom lexicon's recall was never measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mhaudit.report.result import Section
from mhaudit.weak_supervision.lexicons.measured import recall_sentence

__all__ = ["coverage_section", "coverage_sentence"]


def coverage_sentence(collection: Sequence[Mapping[str, str]]) -> str:
    """One sentence per filter the collection used; "" when the store recorded none (posts not collected)."""
    text = " ".join(line[0].upper() + line[1:] + "." for line in map(recall_sentence, collection))
    return (f"The collection's runs used {len(collection)} filters. " if len(collection) > 1 else "") + text


def coverage_section(collection: Sequence[Mapping[str, str]]) -> list[Section]:
    """The report's "Coverage of the target" section (none when no filter was recorded)."""
    text = coverage_sentence(collection)
    if not text:
        return []
    return [
        Section(
            "Coverage of the target",
            text + " That set is a proxy for the stream: the recall holds for "
            "the stream's depressive posts as far as they resemble the set's (itself collected with a "
            "depression lexicon), and the stream's base rate is far lower, so precision and keep share do "
            'not carry over (docs/collect.md, "Recall of the collection").',
            {},
        )
    ]
