"""Every docs/design.md heading the code and the docs cite exists.

Code and docs point into the design as `docs/design.md, "Heading"`,
`design.md ("Heading")` or `design.md "Heading"`, and then perhaps more
headings (`"A" and "B"`) and a paragraph within (`"A", *Paragraph*`); a
heading is a `#` line or a paragraph's (or list item's) bold or italic lead
(`**Heading.**`, `*Heading.*`). A citation after a colon (`design.md: "..."`) quotes the
text, and is not checked. The README's headings are cited the same way,
often by their start (`README, "Running locally"`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("gpcore", "pipeline", "benchmarks", "deploy", "tests", "docs")
SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".sh")
TOP_FILES = ("Makefile", "Dockerfile", "README.md", "setup.py", "pyproject.toml")
# A quoted heading and those chained to it ("A", "B" and "C"), then
# paragraph leads in italics (, *D*); either part may be missing.
QUOTED = r'"[^"\n]{1,120}"'
CHAIN = rf'((?:{QUOTED}(?:,?\s+(?:and\s+)?{QUOTED})*)?)((?:,?\s*\*[^*]{{2,120}}\*)*)'


def headings(text: str) -> set[str]:
    """`#` headings and bold or italic paragraph leads, their end stop dropped."""
    found = set(re.findall(r"^#{1,6} +(.+?)\s*$", text, re.M))
    found |= {lead.rstrip(".:") for lead in re.findall(r"^(?:- )?\*\*([^*\n]+)\*\*", text, re.M)}
    found |= {lead.rstrip(".:") for lead in re.findall(r"^\*([^*\n]+)\*", text, re.M)}
    return found


def flattened(path: Path) -> str:
    """The file with line breaks and the comment marks after them made spaces,
    so that a citation broken over comment lines reads as one."""
    return re.sub(r"\n[ \t]*(?:#+|//)?[ \t]*", " ", path.read_text(errors="replace"))


def scanned_files() -> list[Path]:
    files = [REPO / name for name in TOP_FILES if (REPO / name).exists()]
    for folder in SCANNED:
        files += [p for p in sorted((REPO / folder).rglob("*"))
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts
                  and p != Path(__file__).resolve()]
    return files


def cited_in(text: str, document: str) -> list[tuple[Optional[str], list[str]]]:
    """(heading, [paragraph leads]) of each citation of `document` (a file
    name such as "design.md") in flattened text; heading None where a
    citation names paragraphs alone (`design.md, *Paragraph*`)."""
    pattern = re.compile(rf'\b{re.escape(document)}\)?(?:,\s+|\s+\(|\s+){CHAIN}')
    found = []
    for match in pattern.finditer(text):
        leads = re.findall(r"\*([^*]+)\*", match.group(2))
        named = re.findall(r'"([^"]+)"', match.group(1))
        found += [(heading, leads) for heading in named] or ([(None, leads)] if leads else [])
    return found


def citations(document: str) -> list[tuple[str, str, list[str]]]:
    """(file, heading, [paragraph leads]) of every citation of `document`."""
    return [(path.relative_to(REPO).as_posix(), heading, leads) for path in scanned_files()
            for heading, leads in cited_in(flattened(path), document)]


def test_each_cited_design_heading_exists():
    design = (REPO / "docs" / "design.md").read_text()
    known = headings(design)
    cited = citations("design.md")
    assert len(cited) > 200, "the pattern no longer finds the citations"
    missing = sorted({(path, heading) for path, heading, _ in cited
                      if heading is not None and heading not in known})
    assert not missing, f"docs/design.md has no such heading: {missing}"
    leads = sorted({(path, lead) for path, _, found in cited for lead in found
                    if lead.rstrip(".") not in known})
    assert not leads, f"docs/design.md has no paragraph so led: {leads}"


def test_each_cited_readme_heading_exists():
    readme = (REPO / "README.md").read_text()
    known = headings(readme)
    cited = citations("README")
    assert len(cited) > 5, "the pattern no longer finds the citations"
    missing = sorted({(path, heading) for path, heading, _ in cited if heading is not None
                      and not any(h.startswith(heading) for h in known)})
    assert not missing, f"README.md has no heading that starts so: {missing}"


def test_a_missing_heading_is_found_however_the_citation_is_written(tmp_path):
    """The three forms, broken over comment lines as the code writes them."""
    text = ('# see docs/design.md, "The fitter"\n'
            '# (docs/design.md ("Nowhere at\n#  all"), and docs/design.md "Build" and "Gone")\n'
            'x = 1  # design.md, "Contracts", *No such paragraph*\n'
            '# (docs/design.md, *A paragraph alone*)\n')
    path = tmp_path / "cites.py"
    path.write_text(text)
    assert cited_in(flattened(path), "design.md") == [
        ("The fitter", []), ("Nowhere at all", []), ("Build", []), ("Gone", []),
        ("Contracts", ["No such paragraph"]), (None, ["A paragraph alone"])]
