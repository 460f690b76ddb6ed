"""Synthetic corpora, always labelled synthetic: the cross-platform simulator (demo of the CPFE audit) and the
human-vs-automatic label simulator with a known divergence (demo of the divergence audit)."""
