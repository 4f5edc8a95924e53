"""The Flex Template's metadata.json against the options `gpfit` accepts.

Dataflow passes each parameter to the launcher as `--name=value`, so every
parameter must be a gpfit option, its validation pattern must accept what
gpfit accepts (and the defaults), and refuse what gpfit would refuse.
"""
from __future__ import annotations

import argparse
import json
import re

import pytest

from deploy_helpers import IMAGE, PROJECT, REGION, REPO
from gpfit_runs import write_long_parquet

METADATA = REPO / "deploy" / "flex-template" / "metadata.json"

# For each parameter: values the pattern must accept (and gpfit must parse),
# and values it must refuse.
EXAMPLES = {
    "input": (["gs://my-bucket/series/*.parquet", "gs://my-bucket/series/",
               "gs://my.bucket-1/a/date=2026-11-29/part-0.parquet"],
              ["/local/series", "my-bucket/series", "gs://B/x", "s3://b/x", ""]),
    "output": (["gs://my-bucket/gp-params/run_date=2026-11-29/", "gs://my-bucket/out"],
               ["gs://my-bucket", "gs://my-bucket/", "gs://my-bucket/out/*", "/tmp/out"]),
    "kernel": (["rbf", "matern12", "matern32", "matern52", "periodic", "linear", "rbf+periodic",
                "matern52+periodic", "rbf+rbf", "linear+rbf+periodic", "auto"],
               ["RBF", "matern", "rbf ", "", "rbf+", "+rbf", "rbf + periodic", "rbf,periodic",
                "auto+rbf", "Auto", "linear+linear", "linear+rbf+linear", "lineal"]),
    "candidates": (["rbf,rbf+periodic", "rbf,matern52,rbf+periodic,matern52+periodic", "periodic",
                    "linear,linear+rbf,linear+rbf+periodic"],
                   ["", "rbf,", ",rbf", "rbf, periodic", "auto", "rbf,auto", "rbf;periodic",
                    "linear,linear+linear", "rbf+linear+linear,rbf"]),
    "id_column": (["series_id", "store id", "Series.ID"], ["", "a\nb"]),
    "time_column": (["t", "date"], [""]),
    "value_column": (["y", "sales (units)"], [""]),
    "restarts": (["1", "4", "16"], ["0", "-1", "1.5", "two", ""]),
    "search": (["thorough", "balanced", "quick"],
               ["", "Quick", "fast", "quick ", "thorough,quick", "Balanced"]),
    "min_points": (["2", "3", "10"], ["0", "1", "-3", "2.0"]),
    "max_points": (["1", "4096", "100000", "1000000", "5000000"], ["0", "-1", "1e4"]),
    "batch_size": (["1", "32", "256"], ["0", "-8", "32.0"]),
    "max_failure_fraction": (["0", "0.05", ".5", "1", "1.0"],
                             ["1.5", "-0.1", "2", "5%", "0.5.1"]),
    "previous_output": (["gs://my-bucket/gp-params/run_date=2026-11-28/"],
                        ["gs://my-bucket", "/tmp/previous", "gs://my-bucket/out/*"]),
    "predict_horizon": (["0", "7", "1.5", ".25"], ["-1", "1e3", "seven", ""]),
    "predict_points": (["0", "10", "100000"], ["-1", "1.5", "100001", ""]),
}


@pytest.fixture(scope="module")
def metadata() -> dict:
    return json.loads(METADATA.read_text())


def gpfit_options() -> dict[str, argparse.Action]:
    """{dest: argparse action} of GPFitOptions, gpfit's own options."""
    from pipeline.options import GPFitOptions

    parser = argparse.ArgumentParser(add_help=False)
    GPFitOptions._add_argparse_args(parser)  # pylint: disable=protected-access
    return {action.dest: action for action in parser._actions}  # pylint: disable=protected-access


def test_parameters_are_exactly_gpfits_options(metadata):
    names = [p["name"] for p in metadata["parameters"]]
    assert len(names) == len(set(names))
    assert set(names) == set(gpfit_options()), (
        "metadata.json must describe every gpfit option, and only those")


def test_every_parameter_is_documented_and_validated(metadata):
    assert metadata["name"] and metadata["description"]
    for parameter in metadata["parameters"]:
        assert parameter["label"] and len(parameter["helpText"]) > 20, parameter["name"]
        assert parameter["regexes"], parameter["name"]
        for regex in parameter["regexes"]:
            assert regex.startswith("^") and regex.endswith("$"), regex
            re.compile(regex)
    required = {p["name"] for p in metadata["parameters"] if not p.get("isOptional", False)}
    assert required == {"input", "output"}


def test_the_description_names_every_option_that_writes_predictions(metadata):
    """The form's overview says when <output>/predictions/ is written. It
    named predict_horizon and predict_points only, though predict_steps,
    predict_observed and holdout each write it too (gpfit's own plan of the
    run decides, here for each forecast option alone)."""
    from pipeline.builder import nightly_plan
    from pipeline.io.inputs import Columns, uninspected
    from pipeline.options import GPFitOptions, parse_options

    spec = uninspected("gs://b/series/", Columns("series_id", "t", "y"))
    writers = set()
    for argv in (["--predict_horizon=7", "--predict_points=3"], ["--predict_steps=3"],
                 ["--predict_observed"], ["--holdout=3"], ["--predict_levels=80"],
                 ["--transform=log"]):
        gp = parse_options(["--input=gs://b/series/", "--output=gs://b/out/", *argv])
        nightly, _ = nightly_plan(gp.view_as(GPFitOptions), False, spec)
        if "predictions" in nightly.tables:
            writers |= {arg[2:].split("=")[0] for arg in argv}
    assert writers == {"predict_horizon", "predict_points", "predict_steps", "predict_observed",
                       "holdout"}  # the plan, as this test reads it
    said = metadata["description"]
    assert "/predictions/" in said
    assert {name for name in writers if name not in said} == set()


def test_patterns_accept_gpfits_defaults_and_kernels(metadata):
    from gpcore import KERNELS, FitConfig
    from pipeline import options as gpfit_option_module

    options = gpfit_options()
    for parameter in metadata["parameters"]:
        default = options[parameter["name"]].default
        if default is not None:
            for regex in parameter["regexes"]:
                assert re.fullmatch(regex, str(default)), (parameter["name"], default)
    (kernel,) = [p for p in metadata["parameters"] if p["name"] == "kernel"]
    accepted = {k for k in KERNELS if re.fullmatch(kernel["regexes"][0], k)}
    assert accepted == set(KERNELS)
    assert gpfit_option_module.KERNELS is KERNELS  # gpfit accepts gpcore's kernels, not a copy
    assert all(k in kernel["helpText"] for k in (*KERNELS, "+", "auto"))
    (candidates,) = [p for p in metadata["parameters"] if p["name"] == "candidates"]
    default = ",".join(FitConfig.candidates)
    assert re.fullmatch(candidates["regexes"][0], default) and default in candidates["helpText"]


def stated_default(text: str, opening: str):
    """The first value after `opening` in a help text ("Default: 3; ..." or
    "(default 3.0, ..."), as a number or a lower-case word; None if absent."""
    found = re.search(re.escape(opening) + r"([^\s;,()]+?)\.?(?:[\s;,()]|$)", text)
    if found is None:
        return None
    try:
        return float(found.group(1))
    except ValueError:
        return found.group(1).lower()


def test_each_parameters_default_is_the_one_gpfit_help_states(metadata):
    """The Flex Template's form shows helpText, not `gpfit --help`: where
    both state a default, they state the same one (restarts said 1 where
    gpfit's default is 3)."""
    from pipeline.options import help_parser

    actions = {a.dest: a for a in help_parser()._actions}  # pylint: disable=protected-access
    compared = 0
    for parameter in metadata["parameters"]:
        action = actions[parameter["name"]]
        ours = stated_default(action.help % {"default": action.default}, "(default ")
        theirs = stated_default(parameter["helpText"], "Default: ")
        if ours is not None and theirs is not None:
            assert theirs == ours, (parameter["name"], parameter["helpText"], action.help)
            compared += 1
    assert compared >= 20  # every option with a default, not a parse that found none


def kernel_values() -> list[str]:
    """Every kernel, every sum of two, one of three (the most), one of four,
    auto, and near misses."""
    from gpcore import KERNELS

    sums = [f"{a}+{b}" for a in KERNELS for b in KERNELS]
    return [*KERNELS, *sums, "rbf+matern52+periodic", "linear+rbf+periodic", "linear+rbf+linear",
            "rbf+rbf+rbf+rbf", "auto", "auto+rbf",
            "rbf+", "+rbf",
            "rbf++periodic", "rbf + periodic", "RBF", "rbf,periodic", "sum", ""]


@pytest.mark.parametrize("value", kernel_values())
def test_kernel_pattern_is_what_gpfit_accepts(metadata, value):
    """The pattern and gpfit (FitConfig) agree on every kernel value, as
    --kernel and as a list of --candidates."""
    from pipeline.io.errors import UsageError
    from pipeline.options import GPFitOptions, kernel_settings, parse_options

    def gpfit_accepts(*argv):
        try:
            kernel_settings(parse_options(list(argv)).view_as(GPFitOptions))
            return True
        except UsageError:
            return False

    patterns = {p["name"]: p["regexes"][0] for p in metadata["parameters"]}
    assert bool(re.fullmatch(patterns["kernel"], value)) == gpfit_accepts(f"--kernel={value}")
    # Two kernels besides: FitConfig wants 2 different ones, each named once,
    # which no pattern can check ("rbf,rbf" passes the pattern, and gpfit
    # exits 2); so two that no value here names.
    listed = f"matern12+matern12+matern12,matern32+matern32+matern32,{value}"
    assert bool(re.fullmatch(patterns["candidates"], listed)) == gpfit_accepts(
        "--kernel=auto", f"--candidates={listed}")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_patterns_match_what_gpfit_accepts(metadata, name):
    from pipeline.io.errors import UsageError
    from pipeline.options import GPFitOptions, parse_options

    (parameter,) = [p for p in metadata["parameters"] if p["name"] == name]
    good, bad = EXAMPLES[name]
    action = gpfit_options()[name]
    for value in good:
        assert all(re.fullmatch(r, value) for r in parameter["regexes"]), value
        # As the Flex launcher passes it: --name=value.
        parsed = getattr(parse_options([f"--{name}={value}"]).view_as(GPFitOptions), name)
        assert parsed == (action.type or str)(value)
    for value in bad:
        assert not all(re.fullmatch(r, value) for r in parameter["regexes"]), value
    if action.type in (int, float):
        with pytest.raises(UsageError):
            parse_options([f"--{name}=not-a-number"])


# Values at and past the bounds gpfit puts on one option's value alone: a
# pattern that lets one through starts a launch that gpfit refuses (exit 2)
# minutes later, on the launcher VM, where Dataflow would have refused the
# launch request itself, naming the parameter. Rules between values (a
# level's 6-digit column name, --restarts against the kernel's grid) are
# gpfit's alone.
BOUNDS = {
    "seconds_per_fit_call": ["0", "0.0", "0.", ".0", "00", "0.001", ".5", "1", "15", "15.",
                             "899.99", "900", "900.0", "900.000", "900.5", "901", "1000"],
    "predict_steps": ["0", "1", "99999", "100000", "100001", "999999"],
    "holdout": ["0", "1", "99999", "100000", "100001", "999999"],
    "predict_points": ["1", "99999", "100000", "100001"],  # beside a horizon
    "predict_levels": ["95", "80,95", "50.5", "99.9", "99.9999", "0.5", ".5", "5.", "1,99",
                       "0", "0.0", "100", "100.0", "150", "80,100", "0,95", "..", ".",
                       "1.2.3", "95,", ",95"],
}


def gpfit_accepts(argv: list[str]) -> bool:
    """Whether gpfit's checks of its options (parse, check, the fitter's
    configuration: what it refuses before it looks at any file) pass."""
    from pipeline.builder import fit_config
    from pipeline.io.errors import UsageError
    from pipeline.options import GPFitOptions, check, parse_options

    try:
        gp = parse_options(["--input=gs://b/series/*.parquet", "--output=gs://b/out/", *argv])
        check(gp.view_as(GPFitOptions))
        fit_config(gp.view_as(GPFitOptions))
    except UsageError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_patterns_refuse_what_gpfit_refuses_at_the_bounds(metadata, name):
    (parameter,) = [p for p in metadata["parameters"] if p["name"] == name]
    # predict_points needs a horizon beside it, and nothing else here does.
    beside = ["--predict_horizon=7"] if name == "predict_points" else []
    wrong = {}
    for value in BOUNDS[name]:
        pattern = all(re.fullmatch(r, value) for r in parameter["regexes"])
        gpfit = gpfit_accepts([*beside, f"--{name}={value}"])
        if pattern != gpfit:
            wrong[value] = f"pattern {'accepts' if pattern else 'refuses'}, gpfit " \
                           f"{'accepts' if gpfit else 'refuses'}"
    assert wrong == {}, name


def test_metadata_is_where_the_docs_build_it_from():
    doc = (REPO / "docs" / "dataflow.md").read_text()
    assert "--metadata-file deploy/flex-template/metadata.json" in doc


def test_flex_launch_builds_the_job_and_exits_0(tmp_path, dry_run_module, capsys):
    """`main.py` as the Python Flex launcher runs it: the job is written with
    --template_location (here a local file, staged locally, no network) and
    gpfit must exit 0 without a marker: the job writes it when it finishes."""
    from pipeline import cli

    write_long_parquet(tmp_path / "in")
    for folder in ("staging", "temp"):
        (tmp_path / folder).mkdir()
    argv = [f"--input={tmp_path / 'in'}", f"--output={tmp_path / 'out'}",
            "--runner=DataflowRunner", f"--project={PROJECT}", f"--region={REGION}",
            "--no_auth", "--dataflow_endpoint=http://localhost:9",
            f"--template_location={tmp_path / 'job_object'}",
            f"--staging_location={tmp_path / 'staging'}",
            f"--temp_location={tmp_path / 'temp'}", f"--sdk_container_image={IMAGE}"]
    with dry_run_module.no_network():
        code = cli.run(argv)
    assert (tmp_path / "job_object").is_file()
    assert code == 0
    assert not list((tmp_path / "out").glob("_*.json"))
    out, err = capsys.readouterr()
    assert f"writes {tmp_path / 'out' / '_SUCCESS.json'} last" in out
    assert "Traceback" not in err
    # The job that the launcher hands over writes the manifest itself.
    proto = (tmp_path / "staging" / "pipeline.pb").read_bytes()
    assert b"WriteManifest/Write" in proto


def test_gpfit_dry_run_builds_the_dataflow_job_offline(dry_run_module, capsys):
    """`gpfit --dry_run` on gs:// paths: nothing is listed, read, written or
    submitted, so it needs no network, and it exits 0."""
    from pipeline import cli

    argv = ["--input=gs://gpfit-offline-test-bucket/series/*.parquet",
            "--output=gs://gpfit-offline-test-bucket/gp-params/run_date=2026-11-29/",
            "--runner=DataflowRunner", f"--project={PROJECT}", f"--region={REGION}",
            "--temp_location=gs://gpfit-offline-test-bucket/dataflow/temp",
            f"--sdk_container_image={IMAGE}", "--dry_run=True", "--no_auth"]
    with dry_run_module.no_network():
        code = cli.run(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "dry run: the Dataflow job was built" in out
    assert "Traceback" not in err


def test_gpfit_dry_run_needs_the_dataflow_runner(tmp_path, capsys):
    from pipeline import cli

    code = cli.run([f"--input={tmp_path}/*.parquet", f"--output={tmp_path / 'out'}",
                    "--dry_run=True"])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith(
        "it needs --runner DataflowRunner, got the local runner")
    assert not (tmp_path / "out").exists()
