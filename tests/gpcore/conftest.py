import os
import sys

import numpy as np
import pytest

# benchmarks/ holds the scikit-learn peer (peers.py) and the real-data set
# (realdata.py) that the quality tests share with the benchmark.
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks"))


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)
