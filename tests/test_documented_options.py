"""The README's table of options is gpfit's parser: the same options, in the
same order, each with the default the parser gives it (or, where the
parser leaves it to the kernel, the defaults gpcore's config holds); and
the README's gpfit and gpfit-report command lines are options they take."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from gpcore.config import (AUTO_BASIN_RESTARTS, BASIN_RESTARTS, CANDIDATES, DENSE_MAX_POINTS,
                           MARKOV_MAX_POINTS, SUM_RESTARTS)
from pipeline.options import GPFitOptions

README = Path(__file__).resolve().parents[1] / "README.md"


def documented() -> dict[str, str]:
    """{option: its default cell} of README's "## Options" table, in order."""
    text = README.read_text()
    section = text[text.index("\n## Options\n"):]
    section = section[:section.index("\n## ", 1)]
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\| `--(\w+)[^`]*` \| ([^|]*) \|", section, re.M)}


def parser_defaults() -> dict[str, object]:
    parser = argparse.ArgumentParser(add_help=False)
    GPFitOptions._add_argparse_args(parser)  # pylint: disable=protected-access
    return {action.dest: action.default for action in parser._actions}  # pylint: disable=protected-access


def as_documented(value: object) -> str:
    """A parser default as the table writes it: words in backticks, bools
    in lower case, numbers as they are."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and not value.isdigit():
        return f"`{value}`"
    return str(value)


def test_the_table_lists_every_option_in_the_parsers_order():
    assert list(documented()) == list(parser_defaults())


def test_each_documented_default_is_the_parsers():
    table, defaults = documented(), parser_defaults()
    given = {name: value for name, value in defaults.items() if value is not None}
    for name, value in given.items():
        cell = table[name]
        number = re.fullmatch(r"-?\d+(\.\d+)?", cell)
        if number and isinstance(value, (int, float)) and not isinstance(value, bool):
            assert float(cell) == value, (name, cell, value)
        else:
            assert cell == as_documented(value), (name, cell, value)
    assert len(given) >= 20  # every option with a default, not a parse that found none


def test_the_defaults_left_to_the_kernel_are_gpcores():
    table = documented()
    assert table["input"] == table["output"] == "(required)"
    assert table["previous_output"] == "(none)"
    assert table["candidates"] == f"`{','.join(CANDIDATES)}`"
    assert table["max_points"].startswith(f"{DENSE_MAX_POINTS}; {MARKOV_MAX_POINTS} for ")
    restarts = table["restarts"]
    assert restarts.startswith(f"{BASIN_RESTARTS} for `rbf` and the Matérns "
                               f"({AUTO_BASIN_RESTARTS} under `auto`)"), restarts
    assert restarts.endswith(f"{SUM_RESTARTS} for a sum"), restarts


def readme_commands(command: str) -> list[list[str]]:
    """The argv of each `command ...` line of README.md's code blocks
    (continuations joined, comments cut), but --help and --version."""
    import shlex

    text = README.read_text()
    lines = [line for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
             for line in re.sub(r"\\\n\s*", " ", block).splitlines()]
    found = [shlex.split(line.split(" #")[0])[1:] for line in lines
             if re.match(rf"(\.venv/bin/)?{re.escape(command)} ", line)]
    return [argv for argv in found if not {"--help", "--version"} & set(argv)]


def test_the_readmes_command_lines_are_valid_options():
    # The usage lines a reader copies first: every option in them is one
    # the parsers take, with a value they accept (no file is opened).
    from pipeline.options import check, parse_options
    from pipeline.report.cli import parser as report_parser

    commands = readme_commands("gpfit")
    assert len(commands) >= 5
    for argv in commands:
        check(parse_options(argv).view_as(GPFitOptions))
    (report,) = readme_commands("gpfit-report")
    given = report_parser().parse_args(report)
    assert (given.params, given.series, given.worst, given.random) == (
        "demo/output", ["demo-0001"], 3, 6)
