"""README.md's code blocks, as a reader copies them; for the tests that
run README's examples as written (tests/ is on sys.path through
tests/conftest.py's folder)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python(first_lines: str) -> str:
    """README.md's ```python block that starts with these lines."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (block,) = [b for b in blocks if b.startswith(first_lines)]
    return block
