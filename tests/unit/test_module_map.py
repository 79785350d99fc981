"""The module map (docs/architecture.md, linked from the README's "For contributors") names every
module of kxtx/, and only those: a module added, renamed or split fails here until its row says so."""

from __future__ import annotations

import re

from tests.conftest import ROOT

MARKER = "<!-- module map"
#: Where the module map lives, from the repository root.
MAP = "docs/architecture.md"


def _map_rows(readme: str) -> dict[str, set[str]]:
    """package directory ("kxtx/pipe/", or "kxtx/" for the top level) -> the modules its row names."""
    table = readme.split(MARKER, 1)[1].split("\n\n", 2)[1]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        package, text = (cell.strip() for cell in line.strip("|").split("|", 1))
        directory = re.match(r"`(kxtx/[\w/]*)`", package).group(1)
        rows[directory] = set(re.findall(r"`([\w]+\.py)`", text))
    return rows


def _tree() -> dict[str, set[str]]:
    tree: dict[str, set[str]] = {}
    for path in (ROOT / "kxtx").rglob("*.py"):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        directory = path.parent.relative_to(ROOT).as_posix() + "/"
        tree.setdefault(directory, set()).add(path.name)
    return tree


def test_the_module_map_names_every_module():
    rows, tree = _map_rows((ROOT / MAP).read_text()), _tree()
    missing = {d: sorted(m - rows.get(d, set())) for d, m in tree.items() if m - rows.get(d, set())}
    gone = {d: sorted(m - tree.get(d, set())) for d, m in rows.items() if m - tree.get(d, set())}
    assert not missing, f"modules the module map ({MAP}) does not name (add them to its rows): {missing}"
    assert not gone, f"the module map ({MAP}) names modules that do not exist: {gone}"


def test_the_parser_reads_a_map():
    readme = (
        "intro\n\n<!-- module map: ... -->\n\n| module | what |\n|---|---|\n"
        "| `kxtx/pipe/` | `config.py` (settings), `udf.py` |\n| `kxtx/` (top level) | `errors.py` |\n\n## Next\n"
    )
    assert _map_rows(readme) == {"kxtx/pipe/": {"config.py", "udf.py"}, "kxtx/": {"errors.py"}}


def test_the_readme_links_the_module_map():
    """The README's "For contributors" section is one click from the map."""
    readme = (ROOT / "README.md").read_text()
    contributors = readme.split("\n## For contributors", 1)[1].split("\n## ", 1)[0]
    assert f"]({MAP}#the-module-map)" in contributors
