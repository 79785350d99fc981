"""Regenerate the README command reference and completions/ from the app. Run after CLI changes."""

from pathlib import Path

from kxtx.cli import docs

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    readme = ROOT / "README.md"
    readme.write_text(docs.update_readme(readme.read_text()))
    for name, make in docs.COMPLETIONS.items():
        (ROOT / "completions" / name).write_text(make())
    print("updated README.md and completions/")


if __name__ == "__main__":
    main()
