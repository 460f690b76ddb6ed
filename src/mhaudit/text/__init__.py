"""Text processing shared by the feature channels: one cached spaCy parse per text, and the masking suite."""
