"""Regenerate docs/commands.md (the command reference) and completions/ from the app. Run after CLI changes."""

from pathlib import Path

from kxtx.cli import docs

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    reference = ROOT / docs.REFERENCE
    reference.parent.mkdir(exist_ok=True)
    reference.write_text(docs.reference_markdown())
    for name, make in docs.COMPLETIONS.items():
        (ROOT / "completions" / name).write_text(make())
    print(f"updated {docs.REFERENCE} and completions/")


if __name__ == "__main__":
    main()
