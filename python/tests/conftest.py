"""Fixtures of protojit's Python suite; the helpers they use are in pjtest.py."""

from pathlib import Path

import pytest
from hypothesis import settings

import pjtest

# Hypothesis: the same examples every run and no example database (.hypothesis/) written
# into the working directory, for every test that does not say otherwise (test_fuzz.py's
# settings say the same).
settings.register_profile("protojit", derandomize=True, database=None, deadline=None)
settings.load_profile("protojit")


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus (``<repo>/../shared/corpus``): skipped where absent, failed in CI."""
    return pjtest.require_corpus()


@pytest.fixture(scope="session")
def kinds_schema():
    return pjtest.data_schema("kinds.proto")


@pytest.fixture(scope="session")
def kinds2_schema():
    return pjtest.data_schema("kinds2.proto")


@pytest.fixture(scope="session")
def gm1_schema(corpus):
    return pjtest.corpus_schema("benchmark_message1_proto3.proto")


@pytest.fixture(scope="session")
def gm1_records(corpus):
    """2,000 distinct benchmarks.proto3.GoogleMessage1 records."""
    return pjtest.gm1_proto3_records(2000)
