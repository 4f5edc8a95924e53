"""Flex Template entry point: the `gpfit` command.

Dataflow's Flex Template launcher runs `python main.py --input=... --output=...
<Beam options>` inside the gpfit image (Dockerfile, FLEX_TEMPLATE_PYTHON_PY_FILE),
where the gpfit package is installed, so this file only calls it. It stays
outside the package folders so that running it puts no package folder first
on sys.path.
"""
import sys

from pipeline.cli import run

if __name__ == "__main__":
    sys.exit(run())
