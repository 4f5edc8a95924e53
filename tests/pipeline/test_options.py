"""gpfit's options (pipeline.options): kernels, help, what a manifest records."""
from __future__ import annotations

import re

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import gpcore
from gpcore.batching import MAX_SECONDS_PER_CALL
from pipeline import options
from pipeline.builder import fit_config
from pipeline.io.errors import UsageError
from pipeline.options import help_parser


def test_kernels_are_gpcores():
    assert options.KERNELS is gpcore.KERNELS


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_the_command_prints_gpfits_help_and_reads_nothing(tmp_path, capsys, flag):
    """Either spelling, anywhere among other arguments, before any check."""
    from pipeline import cli
    assert cli.run(["--input", str(tmp_path / "nothing"), flag]) == 0
    assert capsys.readouterr().out == help_parser().format_help()


def test_help_explains_every_option_in_one_line():
    text = help_parser().format_help()
    lines = text.splitlines()
    for flag in ("--input", "--output", "--kernel", "--candidates", "--id_column", "--time_column",
                 "--value_column", "--restarts", "--search", "--min_points", "--max_points",
                 "--batch_size", "--max_failure_fraction", "--seconds_per_fit_call",
                 "--max_rows", "--num_shards", "--break_lock", "--previous_output",
                 "--previous_output_optional", "--predict_horizon", "--predict_points",
                 "--predict_steps", "--predict_levels", "--predict_observed", "--transform",
                 "--holdout"):
        [line] = [l for l in lines if l.strip().startswith(flag + " ")]
        following = lines[lines.index(line) + 1]
        assert len(line.split(None, 2)) == 3, line  # flag, metavar, help on one line
        assert following.strip() == "" or following.strip().startswith("--"), following


def test_a_manifest_records_every_gpfit_option_and_the_beam_options_given():
    assert options.option_names() == (
        "input", "output", "kernel", "candidates", "id_column", "time_column", "value_column", "restarts",
        "search", "min_points", "max_points", "batch_size", "max_failure_fraction",
        "seconds_per_fit_call", "max_rows", "num_shards", "break_lock", "previous_output",
        "previous_output_optional", "predict_horizon", "predict_points", "predict_steps",
        "predict_levels", "predict_observed", "transform", "holdout", "log_level")
    found = options.recorded(PipelineOptions([
        "--input", "in", "--output", "out", "--restarts", "2", "--direct_num_workers", "2"]))
    assert list(found) == [*options.option_names(), "beam"]
    assert (found["input"], found["restarts"], found["kernel"]) == ("in", 2, "rbf")
    assert found["beam"] == {"direct_num_workers": 2}


def test_a_manifest_never_records_a_secret():
    found = options.recorded(PipelineOptions([
        "--input", "in", "--output", "out",
        "--s3_secret_access_key", "wJalrXUtnFEMI", "--s3_access_key_id", "AKIAEXAMPLE",
        "--job_server_timeout", "60",
        "--experiments", "db=postgres://gpfit:hunter2@db.example/p",
        "--experiments", "conn=Server=x;Password=hunter2;Database=y"]))["beam"]
    assert found["s3_secret_access_key"] == options.REDACTED
    assert found["s3_access_key_id"] == options.REDACTED
    assert found["job_server_timeout"] == 60
    assert "hunter2" not in str(found) and "wJalrXUtnFEMI" not in str(found)
    assert "db=postgres://gpfit:<redacted>@db.example/p" in found["experiments"]


def test_break_lock_is_a_flag_and_a_flex_template_value():
    for argv, expected in (([], False), (["--break_lock"], True),
                           (["--break_lock=true"], True), (["--break_lock=false"], False)):
        parsed = options.parse_options(["--input", "i", "--output", "o", *argv])
        assert parsed.view_as(options.GPFitOptions).break_lock is expected, argv


def gp_options(*argv: str) -> options.GPFitOptions:
    return options.parse_options(["--input", "i", "--output", "o", *argv]).view_as(
        options.GPFitOptions)


def test_kernel_takes_sums_and_auto_and_candidates_reach_the_fitter():
    assert fit_config(gp_options()).kernel_name == "rbf"
    assert fit_config(gp_options("--kernel", "rbf+periodic")).kernel_name == "rbf+periodic"
    auto = fit_config(gp_options("--kernel", "auto"))
    assert (auto.kernel, auto.candidates) == ("auto", gpcore.FitConfig.candidates)
    assert options.CANDIDATES is gpcore.FitConfig.candidates  # one default, gpcore's
    chosen = fit_config(gp_options("--kernel=auto", "--candidates=rbf,matern52+periodic"))
    assert chosen.candidates == ("rbf", "matern52+periodic")
    assert options.recorded(PipelineOptions(
        ["--input", "i", "--output", "o", "--kernel", "auto", "--candidates", "rbf,rbf+periodic"]
    ))["candidates"] == "rbf,rbf+periodic"  # as given: the manifest shows what was asked


def test_search_sets_the_far_probes_and_the_fingerprint():
    """thorough keeps FitConfig's default (far probes for a lone kernel,
    none under auto), balanced gates them by the residual check and quick
    turns them off, for rbf and the Materns alone; the fingerprint's
    options say which, so a night that changes it refits."""
    from pipeline.io import fingerprint

    thorough, quick = fit_config(gp_options()), fit_config(gp_options("--search", "quick"))
    balanced = fit_config(gp_options("--search", "balanced"))
    assert (thorough.far_probes, quick.far_probes, balanced.far_probes) == (True, False, True)
    assert (thorough.probe_check, quick.probe_check, balanced.probe_check) == (False, False, True)
    assert fit_config(gp_options("--search=thorough")) == thorough
    keys = {fingerprint.options_key(c) for c in (thorough, balanced, quick)}
    assert len(keys) == 3
    assert b"probe_check" not in fingerprint.options_key(thorough)  # keys as before the option
    assert fit_config(gp_options("--kernel", "auto", "--search", "balanced")).probe_check is False
    assert fit_config(gp_options("--kernel", "matern52", "--search", "balanced")).probe_check
    assert fit_config(gp_options("--kernel", "auto", "--search", "thorough")).far_probes is None
    assert fit_config(gp_options("--kernel", "auto", "--search", "quick")).far_probes is None
    assert fit_config(gp_options("--kernel", "matern12", "--search", "quick")).far_probes is False
    for kernel in ("rbf+periodic", "periodic", "linear"):  # their far probes look for periods
        for search in ("quick", "balanced"):
            config = fit_config(gp_options("--kernel", kernel, "--search", search))
            assert config.far_probes is True and config.probe_check is False
    with pytest.raises(UsageError, match="invalid choice: 'fast'"):
        gp_options("--search", "fast")
    with pytest.raises(ValueError,
                       match="search must be one of thorough, balanced, quick; got .fast."):
        gpcore.config.search_settings("fast", "rbf")
    # The benchmarks' and the command's one way to a config at a search.
    assert gpcore.config.at_search("balanced") == gpcore.FitConfig(probe_check=True)
    assert gpcore.config.at_search("quick", kernel="matern52", restarts=2) == gpcore.FitConfig(
        kernel="matern52", restarts=2, far_probes=False)
    assert gpcore.config.at_search("quick", kernel="auto") == gpcore.FitConfig(kernel="auto")
    with pytest.raises(ValueError, match="search must be one of"):
        gpcore.config.at_search("fast", kernel="matern12")


@pytest.mark.parametrize("argv, expected", [
    (["--kernel", "cubic"], "--kernel must be one of rbf, matern12, matern32, matern52, periodic, "
                            "linear, or a sum of up to 3 of them joined by '+' (e.g. "
                            "rbf+periodic, linear+rbf), linear at most once, or auto; "
                            "got 'cubic'"),
    (["--kernel", "rbf+rbf+rbf+rbf"], "got 'rbf+rbf+rbf+rbf'"),
    (["--kernel", "linear+linear"], "linear at most once, or auto; got 'linear+linear'"),
    (["--kernel", "rbf+"], "got 'rbf+'"),
    (["--kernel", "rbf+periodic", "--candidates", "rbf"],
     "--candidates is for --kernel auto; got --kernel 'rbf+periodic'"),
    (["--candidates", "rbf,periodic"], "--candidates is for --kernel auto; got --kernel 'rbf'"),
    (["--kernel", "auto", "--candidates", "rbf,cubic"],
     "--candidates 'rbf,cubic': candidate kernel 'cubic' is not known; each must be one of rbf, "
     "matern12, matern32, matern52, periodic, linear, or a sum of up to 3 of them joined by '+'"),
    (["--kernel", "auto", "--candidates", "rbf, periodic"], "kernel ' periodic' is not known"),
    (["--kernel", "auto", "--candidates", "rbf"], "at least 2 different kernels"),
    (["--kernel", "auto", "--candidates", "rbf,auto"], "at least 2 kernels separated by commas"),
    (["--kernel", "auto", "--candidates", "rbf,matern52,rbf"], "names 'rbf' twice"),
    (["--kernel", "auto", "--candidates", "rbf+periodic,matern52,periodic+rbf"],
     "names 'rbf+periodic' twice, as 'periodic+rbf' (a sum in another order is the same model)"),
    (["--kernel", "auto", "--candidates", ""], "--candidates '': "),
])
def test_bad_kernels_and_candidates_are_named(argv, expected):
    with pytest.raises(UsageError) as raised:
        options.check(gp_options(*argv))
    assert expected in str(raised.value)


def test_secrets_are_redacted_by_structure_in_beam_and_gpfit_options():
    # Secret-like keys inside JSON, SAS signatures, passwords in URLs, tokens:
    # none of these option names says "secret".
    sas = ("BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature="
           "sv=2022-11-02&ss=b&srt=sco&sp=rl&sig=SASSIGNATURE%3D")
    found = options.recorded(PipelineOptions([
        "--input", "https://reader:inputpass@files.example/series/*.parquet",
        "--output", "gs://bucket/out/?X-Goog-Signature=OUTPUTSIG",
        "--environment_config", '{"env": {"DB_PASSWORD": "jsonpass", "REGION": "eu"}, '
                                '"args": ["--token=argtoken"]}',
        "--azure_connection_string", sas,
        "--experiments", "auth=Authorization: Bearer abcdefghijklmnop0123",
        "--experiments", "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
        "--experiments", "aws=AKIAIOSFODNN7EXAMPLE"]))
    text = str(found)
    for secret in ("inputpass", "OUTPUTSIG", "jsonpass", "argtoken", "SASSIGNATURE",
                   "abcdefghijklmnop0123", "eyJzdWIiOiIxMjM0In0", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in text, (secret, found)
    # What is not secret stays readable.
    assert found["input"] == "https://reader:<redacted>@files.example/series/*.parquet"
    assert '"REGION": "eu"' in found["beam"]["environment_config"]
    assert "BlobEndpoint=https://acct.blob.core.windows.net/" in found["beam"][
        "azure_connection_string"]
    assert found["kernel"] == "rbf" and found["break_lock"] is False


def test_log_level_is_an_option_with_choices():
    assert options.parse_options(["--log_level", "debug"]).view_as(
        options.GPFitOptions).log_level == "debug"
    with pytest.raises(UsageError, match="log_level"):
        options.parse_options(["--log_level", "loud"])


# Grid points: 10 length scales (periodic: 3 periods x 2 length scales; a
# sum the product of its components' sum options) times 4 noise ratios.
@pytest.mark.parametrize("kernel, most", [
    ("rbf", 40), ("matern12", 40), ("periodic", 24), ("linear", 4), ("rbf+periodic", 96),
    ("linear+rbf", 32), ("rbf+periodic+matern12", 768), ("auto", 96)])
def test_restarts_up_to_the_start_grids_points_are_taken_and_one_more_refused(kernel, most):
    """Each start past the grid's points repeats one (docs/design.md,
    "Restarts from other basins"), yet is a batch member held in memory."""
    options.check_restarts(most, kernel)
    with pytest.raises(UsageError, match=rf"--restarts \({most + 1}\) must be at most {most}: "):
        options.check_restarts(most + 1, kernel)


@pytest.mark.parametrize("argv", [
    ["--max_failure_fraction", "0"], ["--max_failure_fraction", "1"],
    ["--seconds_per_fit_call", "1e-9"],
    ["--seconds_per_fit_call", str(MAX_SECONDS_PER_CALL)], ["--num_shards", "0"],
    ["--predict_steps", str(options.MAX_PREDICT_POINTS)],
    ["--holdout", str(options.MAX_PREDICT_POINTS)],
    ["--predict_horizon", "1", "--predict_points", str(options.MAX_PREDICT_POINTS)],
])
def test_the_ends_of_each_range_are_taken(argv):
    options.check(gp_options(*argv))


@pytest.mark.parametrize("argv, expected", [
    (["--max_failure_fraction", "-0.01"], "--max_failure_fraction must be between 0 and 1"),
    (["--seconds_per_fit_call", "0"],
     "--seconds_per_fit_call must be a number > 0 and at most 900; got 0"),
    (["--seconds_per_fit_call", "nan"],
     "--seconds_per_fit_call must be a number > 0 and at most 900; got nan"),
    # 1e308 passed as finite and, like inf, put each bundle's series in one
    # fit call, which Dataflow cannot split.
    (["--seconds_per_fit_call", "900.5"],
     "--seconds_per_fit_call must be a number > 0 and at most 900; got 900.5"),
    (["--seconds_per_fit_call", "1e308"],
     "--seconds_per_fit_call must be a number > 0 and at most 900; got 1e+308"),
    (["--num_shards", "-1"], "--num_shards must be >= 0; got -1"),
    (["--predict_steps", "100001"], "--predict_steps must be between 0 and 100000; got 100001"),
    (["--holdout", "100001"], "--holdout must be between 0 and 100000 points; got 100001"),
    (["--predict_horizon", "1", "--predict_points", "100001"],
     "--predict_points must be between 0 and 100000; got 100001"),
    (["--predict_horizon", "inf", "--predict_points", "2"], "--predict_horizon must be >= 0"),
    (["--predict_horizon", "nan", "--predict_points", "2"], "--predict_horizon must be >= 0"),
])
def test_a_value_just_past_a_range_is_refused_by_name(argv, expected):
    """Each option's refusal names it and the value given; the value one
    step inside is taken (test_the_ends_of_each_range_are_taken)."""
    with pytest.raises(UsageError, match="^" + re.escape(expected)):
        options.check(gp_options(*argv))
