"""The package layout drawn in docs/design.md, and who may import whom.

  gpcore/            imports no pipeline module, no Beam, no pyarrow, no pandas
  gpcore/search.py   the fitter's in-graph search: imports no batch driver
  pipeline/io/       the on-disk contract: imports only pipeline.io (and gpcore);
                     from Beam only its file systems
  pipeline/report/   imports only pipeline.report, pipeline.io and gpcore
  pipeline/*.py      the Beam job: anything but the report
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEAM_FILE_SYSTEMS = ("apache_beam.io.filesystem", "apache_beam.io.filesystems")


def modules(folder: str) -> dict[str, list[str]]:
    """{file relative to the repo: every module it imports (at any depth)}."""
    found = {}
    for path in sorted((REPO / folder).rglob("*.py")):
        names = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found[path.relative_to(REPO).as_posix()] = names
    return found


def inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_gpcore_imports_no_pipeline_module():
    for path, names in modules("gpcore").items():
        assert not [n for n in names if inside(n, "pipeline")], path


def test_the_contract_imports_only_itself_gpcore_and_beams_file_systems():
    for path, names in modules("pipeline/io").items():
        ours = [n for n in names if inside(n, "pipeline") and not inside(n, "pipeline.io")
                and n != "pipeline.io"]
        assert not ours, (path, ours)
        beam = [n for n in names if inside(n, "apache_beam")
                and not any(inside(n, fs) for fs in BEAM_FILE_SYSTEMS)]
        assert not beam, (path, beam)


def test_the_report_uses_only_the_contract_and_gpcore():
    for path, names in modules("pipeline/report").items():
        ours = [n for n in names if inside(n, "pipeline")
                and not (inside(n, "pipeline.io") or inside(n, "pipeline.report"))
                and n not in ("pipeline.io", "pipeline.report")]
        assert not ours, (path, ours)


def test_the_beam_job_does_not_import_the_report():
    for path, names in modules("pipeline").items():
        if not path.startswith("pipeline/report/"):
            assert not [n for n in names if inside(n, "pipeline.report")], path


def drawn_modules(heading: str) -> set[str]:
    """The .py files of the first tree drawn under docs/design.md's `heading`
    (a `## ` heading), as paths from the repository's root."""
    design = (REPO / "docs" / "design.md").read_text()
    layout = design[design.index(f"\n## {heading}\n"):]
    layout = layout[:layout.index("```", layout.index("```") + 3)]
    drawn, folder = set(), []
    for line in layout.splitlines():
        match = re.match(r"^(\s*)(\S+\.py|\S+/)(\s|$)", line.replace("├── ", "    ")
                         .replace("└── ", "    ").replace("│   ", "    "))
        if not match:
            continue
        depth = len(match.group(1)) // 4
        name = match.group(2)
        folder[depth:] = [name] if name.endswith("/") else []
        if name.endswith(".py"):
            drawn.add("".join(folder[:depth]) + name)
    return drawn


def test_every_pipeline_module_is_in_the_layout_drawn_in_the_design():
    actual = {p.relative_to(REPO).as_posix() for p in (REPO / "pipeline").rglob("*.py")}
    assert actual == {d for d in drawn_modules("Layout") if d.startswith("pipeline/")}


def test_every_gpcore_module_is_in_the_tree_drawn_under_the_fitter():
    """"The fitter" draws gpcore/ as "its modules, one idea each"."""
    actual = {p.relative_to(REPO).as_posix() for p in (REPO / "gpcore").glob("*.py")}
    drawn = drawn_modules("The fitter")
    assert actual == drawn, (f"in gpcore/, not drawn: {sorted(actual - drawn)}; "
                             f"drawn, not in gpcore/: {sorted(drawn - actual)}")


def test_gpcore_imports_neither_beam_nor_pyarrow_nor_pandas():
    # The numerics run inside any engine (docs/design.md, "Layout"): Beam,
    # the Parquet layer and data frames belong to the pipeline.
    for path, names in modules("gpcore").items():
        found = [n for n in names if any(inside(n, p) for p in ("apache_beam", "pyarrow", "pandas"))]
        assert not found, (path, found)


def test_the_search_imports_no_batch_driver():
    # The search is compiled by the driver, never the other way round
    # (docs/design.md, "The fitter"): no cycle.
    drivers = ("gpcore.fitter", "gpcore.choice", "gpcore.side_by_side", "gpcore.markov_fitter")
    names = modules("gpcore")["gpcore/search.py"]
    found = [n for n in names if any(inside(n, d) for d in drivers)]
    assert not found, found
    assert "gpcore.search" in modules("gpcore")["gpcore/fitter.py"]
