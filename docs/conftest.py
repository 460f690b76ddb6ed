"""docs/api.md runs as a doctest under the test suite's settings: its environment (test secret, a throwaway
parse cache, one BLAS thread) and its CI rule that a skipped test fails."""

from tests.conftest import pytest_runtest_makereport  # noqa: F401  (importing it also sets the environment)
