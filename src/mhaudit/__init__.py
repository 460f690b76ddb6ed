"""mhaudit: audit mental-health text classifiers across platforms and label sources."""

__version__ = "0.1.0"
