"""The tables everything else reads and writes, and their one reader/writer (`io.read_table`/`write_table`):
corpora with their sources and label mappings, predictions, attributions and the label store."""
