"""Collection of social-media posts for the audits: lexicon filters (stream clients to follow)."""
