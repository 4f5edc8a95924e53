"""Beam's --setup_file needs a file of this name (it builds the sdist that
Dataflow workers install from it); the metadata is pyproject.toml's."""
from setuptools import setup

setup()
