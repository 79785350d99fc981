"""The README and the pages under docs/ hold together: every page is linked from the README, and every
relative link of theirs (a file, a file's heading, a heading of the same page) leads somewhere.
Headings are made into anchors as GitHub does."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, each
    space a `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    fence = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6} (.+)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def broken(page: Path) -> list[str]:
    """The relative links of `page` that lead nowhere."""
    bad = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            bad.append(f"{target} (no such heading)")
    return bad


def test_every_docs_page_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    linked = {t.partition("#")[0] for t in LINK.findall(readme)}
    missing = [
        p.relative_to(ROOT).as_posix() for p in pages()[1:] if p.relative_to(ROOT).as_posix() not in linked
    ]
    assert not missing, f"pages under docs/ the README does not link: {missing}"


def test_every_relative_link_leads_somewhere():
    bad = {p.relative_to(ROOT).as_posix(): broken(p) for p in pages()}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_slugs_are_githubs():
    assert slug("Avro, Protobuf and JSON Schema: `--schema-registry`") == (
        "avro-protobuf-and-json-schema---schema-registry"
    )
    assert slug("### The C loops, `kxtx.native` (issue 47; 2026-11-29)".lstrip("# ")) == (
        "the-c-loops-kxtxnative-issue-47-2026-11-29"
    )
    assert anchors("# a\n```\n# not a heading\n```\n## a\n") == {"a", "a-1"}


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "p.md"
    (tmp_path / "q.md").write_text("# Here\n")
    page.write_text(
        "[ok](q.md#here) [gone](r.md) [no heading](q.md#there) [self](#nowhere) [web](https://x)\n"
    )
    assert broken(page) == [
        "r.md (no such file)",
        "q.md#there (no such heading)",
        "#nowhere (no such heading)",
    ]
