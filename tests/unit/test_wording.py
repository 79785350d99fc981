from types import SimpleNamespace

import pytest

from kxtx.wording import article, install_hint, plural


@pytest.mark.parametrize(
    "count, noun, expected",
    [
        (0, "transaction", "0 transactions"),
        (1, "transaction", "1 transaction"),
        (2, "transaction", "2 transactions"),
        (1, "row", "1 row"),
        (12345, "record", "12,345 records"),
        (2, "process", "2 processes"),
        (1, "byte", "1 byte"),
    ],
)
def test_plural(count, noun, expected):
    assert plural(count, noun) == expected


@pytest.mark.parametrize(
    "word, expected",
    [
        ("int", "an int"),
        ("str", "a str"),
        ("dict", "a dict"),
        ("object", "an object"),
        ("Element", "an Element"),
        ("NoneType", "a NoneType"),
    ],
)
def test_article(word, expected):
    assert article(word) == expected


def test_messages_count_in_the_singular_when_there_is_one():
    from kxtx.pipe.stats import PipeInterrupted
    from kxtx.records import TXN_TOPIC, decode
    from tests.unit import record_encoder as e

    rec = decode(TXN_TOPIC, e.key(0, e.string("tx")), b"\x00")
    assert "value of 1 byte has no version" in rec.notes
    stop = PipeInterrupted(SimpleNamespace(records_in=1, transactions=1), 2)
    assert str(stop).startswith("stopped by SIGINT after 1 record in 1 transaction;")


def _tree(root, *files):
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root / "kxtx"


@pytest.mark.parametrize(
    "files, expected",
    [
        # imported from its clone (an editable install): the one line that works there, with -e
        (("pyproject.toml", "setup.py", "kxtx/__init__.py"), "pip install -e '{root}[spark]'"),
        # from site-packages (a copy from the clone, or a wheel): both ways, none of them PyPI's
        (
            ("kxtx/__init__.py",),
            "pip install -e '.[spark]' in kxtx's clone, or pip install 'kxtx-0.1.0-….whl[spark]' with its wheel",
        ),
        # another project's pyproject.toml beside an installed kxtx is no clone of kxtx
        (
            ("pyproject.toml", "kxtx/__init__.py"),
            "pip install -e '.[spark]' in kxtx's clone, or pip install 'kxtx-0.1.0-….whl[spark]' with its wheel",
        ),
    ],
)
def test_install_hint(tmp_path, files, expected):
    hint = install_hint("spark", _tree(tmp_path, *files))
    assert hint == expected.format(root=tmp_path)
    assert "'kxtx[" not in hint  # kxtx is not on PyPI


def test_install_hint_of_this_checkout_names_it():
    from tests.conftest import ROOT

    assert install_hint("registry") == f"pip install -e '{ROOT}[registry]'"
