"""Feature channels of the label-source (TSS) audit: A lexical, B morpho-syntax, C psycholinguistic style."""
