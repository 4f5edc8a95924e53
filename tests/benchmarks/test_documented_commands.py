"""Every benchmark command the docs give parses.

A reader copies `python benchmarks/X.py ...` from README.md, docs/*.md or
benchmarks/*.md (or runs a Makefile bench target with the arguments the
docs suggest); each such command line is handed to the script's own
argparse, in a fresh process per script, stopped right after parsing: no
benchmark runs. Placeholders (N, S, `a|b`, `[optional]`) are filled or
expanded. Each documented script's --help answers without TensorFlow.
"""
import functools
import glob
import itertools
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ("README.md", "docs/*.md", "benchmarks/*.md")

# A placeholder's value, after the option it follows (None: anywhere).
PLACEHOLDERS = {("--split", "S"): "tune", ("--search", "S"): "balanced", (None, "N"): "10",
                (None, "K"): "rbf", (None, "T"): "1", (None, "R"): "2", (None, "VARIANT"): "all",
                (None, "<revision>"): "HEAD", ("--set", "NAME"): "workload_a",
                (None, "NAME=VALUE"): "PROBE_LENGTHS=0.5", (None, "..."): None}

# Run in a fresh process: each argv of one script, argparse stopped after parsing.
DRIVER = r"""
import argparse, contextlib, io, json, runpy, sys

class Parsed(Exception):
    pass

real = argparse.ArgumentParser.parse_args

def parse_args(self, args=None, namespace=None):
    real(self, args, namespace)
    raise Parsed

script, cases = sys.argv[1], json.loads(sys.argv[2])
out = {}
sys.argv = [script, "--help"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        out["help"] = e.code
out["tensorflow"] = "tensorflow" in sys.modules
argparse.ArgumentParser.parse_args = parse_args
out["cases"] = []
for argv in cases:
    sys.argv = [script, *argv]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_path(script, run_name="__main__")
            problem = "finished without parsing its arguments"
        except Parsed:
            problem = None
        except SystemExit as e:
            problem = f"exit {e.code}: {err.getvalue().strip()[-400:]}"
    out["cases"].append(problem)
print("RESULT " + json.dumps(out))
"""


def _code_spans(text):
    """The command lines in fenced blocks (continuations joined) and inline code."""
    spans = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        spans += re.sub(r"\\\n\s*", " ", block).splitlines()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans += [" ".join(code.split()) for code in re.findall(r"`([^`]+)`", prose)]
    return spans


def _fill(command):
    """Every concrete argv of a documented command line: `[x]` with and
    without, `a|b` each, placeholders filled."""
    command = command.split(" #")[0]
    optional = re.findall(r"\[([^\]]*)\]", command)
    base = re.sub(r"\s*\[[^\]]*\]", "{}", command.replace("{", "{{").replace("}", "}}"))
    for chosen in itertools.product(*[("", " " + o) for o in optional]):
        tokens, alternatives = shlex.split(base.format(*chosen)), []  # [[token, ...] each]
        for before, token in zip([None] + tokens, tokens):
            key = (before, token) if (before, token) in PLACEHOLDERS else (None, token)
            if token == "..." and before and before.startswith("--"):
                alternatives.append([["x"]])  # an option's value left out
            elif key in PLACEHOLDERS:
                alternatives.append([[PLACEHOLDERS[key]] if PLACEHOLDERS[key] else []])
            elif "|" in token and "=" not in token:
                alternatives.append([[v] for v in token.split("|")])
            else:
                alternatives.append([[token]])
        for combo in itertools.product(*alternatives):
            yield [t for part in combo for t in part]


@functools.lru_cache(maxsize=None)
def _make_lines(target, assignments):
    """The benchmark lines `make -n TARGET VAR="..."` prints (nothing runs)."""
    done = subprocess.run(["make", "-n", "-s", target, *shlex.split(assignments)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if " benchmarks/" in line]


def _make_commands(text):
    """`make bench... VAR="..."` invocations in text, as `make -n` prints them."""
    return [line for target, assignments in
            re.findall(r"\bmake (bench[\w-]*)((?: [A-Z_]+=\"[^\"]*\")*)", text)
            for line in _make_lines(target, assignments)]


@functools.lru_cache(maxsize=None)
def documented_commands(with_make=True):
    """{script path: [(where, argv)]} for every documented benchmark command
    (each argv once, where it is first found); with_make: also the bench
    targets' lines as `make -n` prints them (subprocesses: not at collection)."""
    found, seen = {}, set()

    def keep(script, where, argv):
        if (script, tuple(argv)) not in seen:
            seen.add((script, tuple(argv)))
            found.setdefault(script, []).append((where, argv))

    def add(where, command):
        words = command.split()
        at = next((i for i, w in enumerate(words) if re.fullmatch(r"benchmarks/\w+\.py", w)), None)
        if at is None or not re.search(r"(^|/)python[\d.]*$", words[at - 1] if at else ""):
            return
        pattern = words[at].replace("N.py", "*.py") if words[at].endswith("N.py") else words[at]
        for script in sorted(glob.glob(os.path.join(ROOT, pattern))) or [words[at]]:
            for argv in _fill(" ".join(words[at + 1:])):
                keep(script, where, argv)
                if script.endswith("alias_levers.py") and len(argv) > 1:  # runs another script
                    keep(os.path.join(ROOT, argv[1]), where, argv[2:])

    for pattern in DOCS + ("Makefile",):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            text = open(path).read()
            where = os.path.relpath(path, ROOT)
            spans = _code_spans(text) if path.endswith(".md") else []
            for span in spans:
                add(where, span)
            if with_make:
                for line in _make_commands(text if path.endswith("Makefile") else "\n".join(spans)):
                    add(where + " (make -n)", line)
    return found


SCRIPTS = pytest.mark.parametrize("script", sorted(documented_commands(with_make=False)),
                                  ids=lambda s: os.path.relpath(s, ROOT))


def test_the_docs_give_benchmark_commands_and_make_targets():
    # The extraction itself: the README's and RESULTS.md's best-known commands are among them.
    commands = documented_commands()
    speed = commands[os.path.join(ROOT, "benchmarks", "speed.py")]
    assert ["--workloads", "a", "--rounds", "1", "--skip-realdata"] in [a for _, a in speed]
    assert ["--workloads", "a", "--count", "100", "--skip-pipeline"] in [a for _, a in speed]
    assert len(commands) >= 30
    # Every script a bench target runs is one of the parametrised scripts below.
    assert set(commands) == set(documented_commands(with_make=False))


@functools.lru_cache(maxsize=None)
def _driven(script):
    """The DRIVER's answer for one script: its --help's exit, whether that
    imported TensorFlow, and each documented argv's problem (None: parsed)."""
    cases = documented_commands()[script]
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, script, json.dumps([argv for _, argv in cases])],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    result = next((json.loads(line[7:]) for line in done.stdout.splitlines()
                   if line.startswith("RESULT ")), None)
    assert result is not None, done.stdout[-2000:] + done.stderr[-3000:]
    return result


@SCRIPTS
def test_each_documented_command_parses(script):
    assert os.path.isfile(script), f"documented but missing: {os.path.relpath(script, ROOT)}"
    result = _driven(script)
    assert result["help"] == 0, f"{script} --help exited {result['help']}"
    broken = [f"{where}: {' '.join(argv)} -> {problem}"
              for (where, argv), problem in zip(documented_commands()[script], result["cases"])
              if problem]
    assert not broken, "\n".join(broken)


@SCRIPTS
def test_help_of_each_documented_script_needs_no_tensorflow(script):
    # --help is how a reader checks a flag: TensorFlow's import is seconds of CPU.
    assert not _driven(script)["tensorflow"], f"{script} --help imported TensorFlow"
