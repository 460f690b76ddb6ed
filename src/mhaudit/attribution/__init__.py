"""Token attributions and their stability across platforms (CPFE axis 5)."""

EXPLAIN_SAMPLE = 200  # texts attributed per (platform, data set), the same texts for every model and seed
