"""gpfit's options (pipeline.options): kernels, help, what a manifest records."""
from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

import gpcore
from pipeline import options
from pipeline.options import help_parser


def test_kernels_are_gpcores():
    assert options.KERNELS is gpcore.KERNELS


def test_help_explains_every_option_in_one_line():
    text = help_parser().format_help()
    lines = text.splitlines()
    for flag in ("--input", "--output", "--kernel", "--id_column", "--time_column",
                 "--value_column", "--restarts", "--min_points", "--max_points",
                 "--batch_size", "--max_failure_fraction"):
        [line] = [l for l in lines if l.strip().startswith(flag + " ")]
        following = lines[lines.index(line) + 1]
        assert len(line.split(None, 2)) == 3, line  # flag, metavar, help on one line
        assert following.strip() == "" or following.strip().startswith("--"), following


def test_a_manifest_records_every_gpfit_option_and_the_beam_options_given():
    assert options.option_names() == (
        "input", "output", "kernel", "id_column", "time_column", "value_column", "restarts",
        "min_points", "max_points", "batch_size", "max_failure_fraction")
    found = options.recorded(PipelineOptions([
        "--input", "in", "--output", "out", "--restarts", "2", "--direct_num_workers", "2"]))
    assert list(found) == [*options.option_names(), "beam"]
    assert (found["input"], found["restarts"], found["kernel"]) == ("in", 2, "rbf")
    assert found["beam"] == {"direct_num_workers": 2}
