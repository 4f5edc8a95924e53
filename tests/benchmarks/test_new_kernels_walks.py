"""`python benchmarks/new_kernels.py walks` (docs/design.md, "Kernels are
described once"): its count of matern12 fits whose length scale sits at the
10-span bound agrees with the fitted length scales it prints beside it."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_walks_counts_the_length_scales_at_the_bound():
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "new_kernels.py"),
                           "walks"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    held = re.search(r"length scale at the bound of 10 spans: (\d+) of 30; at 1,000 spans: (\d+)",
                     done.stdout)
    assert held, done.stdout
    longest = float(re.search(r"fitted length scale / span: [\d.]+ to ([\d.]+)",
                              done.stdout).group(1))
    # The printed ratios are the 1,000-span fits': the longest under 10
    # spans holds none at either bound (docs/design.md: "never at that bound").
    assert longest < 9.9
    assert held.groups() == ("0", "0")
