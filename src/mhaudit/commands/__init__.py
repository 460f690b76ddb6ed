"""Command groups beyond the core ones in mhaudit.cli; each module has `register(app)`."""
