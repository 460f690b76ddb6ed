"""Token attributions and their stability across platforms (CPFE axis 5)."""
