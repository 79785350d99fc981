"""Load and validate the `--udf` target: `module:function` or `path/to/file.py:function`.

Accepted objects: a plain Python function (one argument: the value, or the record dict with
`--input record`), a plain function annotated to take a `pandas.Series` (run vectorised, like a
`pandas_udf`), or an object made with `pyspark.sql.functions.udf` / `pandas_udf` / `arrow_udf` taking
one column. Everything is checked before the first record is consumed.

Loading happens in two steps because `udf("string")`-style decorators need a live SparkContext when
the module is imported: `locate()` checks the spec and that the module/file exists (cheap, before
Spark starts), `load()` imports it once the session is up.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kxtx.errors import UsageError
from kxtx.pipe.worker.kinds import ARROW, PANDAS, PANDAS_ITER, ROW
from kxtx.wording import article

# pyspark.util.PythonEvalType values (stable since Spark 2.x / 4.1), mirrored so this module does not
# import pyspark; `load()` checks them against pyspark when it is there.
_EVAL_KINDS = {100: ROW, 101: ROW, 200: PANDAS, 204: PANDAS_ITER, 250: ARROW}
_EVAL_NAMES = {
    201: "grouped-map pandas UDF",
    202: "grouped-aggregate pandas UDF",
    203: "window pandas UDF",
    205: "mapInPandas function",
    207: "mapInArrow function",
    251: "iterator arrow_udf",
    252: "grouped-aggregate arrow_udf",
}


@dataclass(frozen=True)
class UdfTarget:
    spec: str
    function: str
    module: str | None = None  # `module:function`
    path: Path | None = None  # `path/file.py:function`


@dataclass
class LoadedUdf:
    target: UdfTarget
    func: Callable[..., Any]
    kind: str
    module: Any
    #: the source file to ship to executors on a cluster (None for installed packages)
    source: Path | None = None

    @property
    def name(self) -> str:
        return self.target.spec


def parse_spec(spec: str) -> UdfTarget:
    text = spec.strip()
    where, sep, func = text.rpartition(":")
    if not sep or not where or not func:
        raise UsageError(
            f"--udf {spec!r}: expected MODULE:FUNCTION or PATH/FILE.py:FUNCTION (e.g. myudfs:enrich)"
        )
    if not func.replace("_", "a").replace(".", "a").isalnum() or func[0].isdigit():
        raise UsageError(f"--udf {spec!r}: {func!r} is not a Python function name")
    if where.endswith(".py") or os.sep in where or "/" in where:
        return UdfTarget(text, func, path=Path(where))
    return UdfTarget(text, func, module=where)


def locate(spec: str) -> UdfTarget:
    """Check that the module or file exists, without importing it."""
    target = parse_spec(spec)
    if target.path is not None:
        if not target.path.is_file():
            raise UsageError(f"--udf {spec!r}: file {str(target.path)!r} not found")
        return target
    _add_cwd_to_path()
    assert target.module is not None  # parse_spec gives a target a path or a module
    try:
        found = importlib.util.find_spec(target.module)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"--udf {spec!r}: cannot find module {target.module!r}: {exc}") from None
    if found is None:
        raise UsageError(
            f"--udf {spec!r}: no module named {target.module!r} (not installed and not in the "
            "current directory; a file path like ./udfs.py:fn also works)"
        )
    return target


def load(target: UdfTarget, input_mode: str = "value") -> LoadedUdf:
    """Import the module, find the function, decide how to call it, check its signature."""
    module, source = _import(target)
    obj: Any = module
    for part in target.function.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"--udf {target.spec!r}: {_where(target)} has no attribute {part!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(
            f"--udf {target.spec!r}: {target.function} is {article(type(obj).__name__)}, not a function"
        )
    func, kind = classify(obj, target.spec)
    check_signature(func, kind, target.spec, input_mode)
    return LoadedUdf(target, func, kind, module, source)


def classify(obj: Any, spec: str = "UDF") -> tuple[Callable[..., Any], str]:
    """(python function, kind) for a plain function or a pyspark udf/pandas_udf/arrow_udf object."""
    eval_type = getattr(obj, "evalType", None)
    if eval_type is not None and hasattr(obj, "func"):
        kind = _EVAL_KINDS.get(eval_type)
        if kind is None:
            what = _EVAL_NAMES.get(eval_type, f"UDF of eval type {eval_type}")
            raise UsageError(
                f"--udf {spec!r} is a {what}; kxtx pipe takes a scalar udf, pandas_udf or arrow_udf "
                "(one column in, one out) or a plain function"
            )
        return obj.func, kind
    return obj, _kind_from_annotations(obj)


def _kind_from_annotations(func: Callable) -> str:
    """A plain function annotated `(s: pd.Series) -> ...` is run vectorised on pandas batches."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return ROW
    if not params:
        return ROW
    ann = params[0].annotation
    name = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
    if name in ("pd.Series", "pandas.Series", "Series", "pd.DataFrame", "DataFrame"):
        return PANDAS
    if name in ("pa.Array", "pyarrow.Array", "Array"):
        return ARROW
    return ROW


def check_signature(func: Callable, kind: str, spec: str, input_mode: str = "value") -> None:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return  # builtins without a signature: cannot check, call and see
    what = "the record dict" if input_mode == "record" else "the value"
    if kind == PANDAS:
        what = "a pandas DataFrame of records" if input_mode == "record" else "a pandas Series of values"
    elif kind == PANDAS_ITER:
        what = "an iterator of pandas Series"
    elif kind == ARROW:
        what = "a pyarrow Array of values"
    try:
        sig.bind(object())
    except TypeError:
        raise UsageError(
            f"--udf {spec!r}: {getattr(func, '__name__', 'function')}{sig} cannot be called with one "
            f"argument; kxtx calls it with {what}"
        ) from None
    if kind == ARROW and input_mode == "record":
        raise UsageError(f"--udf {spec!r}: an arrow_udf takes values only; drop --input record")


def _add_cwd_to_path() -> None:
    # `kxtx pipe --udf myudfs:fn` should find ./myudfs.py as `python -m` would.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(target: UdfTarget) -> tuple[ModuleType, Path | None]:
    try:
        if target.path is not None:
            path = target.path.resolve()
            name = f"kxtx_udf_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise UsageError(f"--udf {target.spec!r}: cannot import {str(target.path)!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module, path
        _add_cwd_to_path()
        assert target.module is not None  # parse_spec gives a target a path or a module
        module = importlib.import_module(target.module)
    except UsageError:
        raise
    except SyntaxError as exc:
        raise UsageError(
            f"--udf {target.spec!r}: syntax error in {exc.filename}:{exc.lineno}: {exc.msg}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - any import-time failure of user code
        raise UsageError(
            f"--udf {target.spec!r}: importing {_where(target)} failed: "
            f"{type(exc).__name__}: {exc}{_trace_site(exc)}"
        ) from None
    return module, _own_source(module)


def _trace_site(exc: BaseException) -> str:
    """` (at file:line)` of the innermost frame, so an import-time error points at the user's code."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    return f" (at {last.tb_frame.f_code.co_filename}:{last.tb_lineno})" if last else ""


def _own_source(module: ModuleType) -> Path | None:
    """The module's file if it is the user's own code (not an installed package)."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return None
    return path


def _where(target: UdfTarget) -> str:
    return str(target.path) if target.path is not None else f"module {target.module!r}"
