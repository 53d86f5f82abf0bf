"""A planner's plain script, and the worker processes that would run it again.

A dask worker of the embedded cluster is a new process that imports the caller's
main script before its first task (that is how multiprocessing finds what the
script defines). A script that calls `sim.recommend` at its top level, outside
`if __name__ == "__main__":`, would start the cluster again in every worker, and
multiprocessing refuses that with a long traceback. So the functions that start
the embedded cluster ask `in_process_instead` first: for such a call they run in
this process (the results are the same, one run after another) and say so in one
line that names the guard.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import FrameType

GUARD = 'if __name__ == "__main__":'


def in_process_instead(call: str, workers: int | None, scheduler: str | None,
                       client: object) -> bool:
    """True (after a one-line note on stderr) when `call` would start the embedded cluster
    from a script's top level outside the guard; the caller then runs in this process."""
    if client is not None or scheduler is not None or workers == 0:
        return False
    script = unguarded_script(sys._getframe(1))
    if script is None:
        return False
    print(f"sim: {call} runs in this process, not on worker processes: {script.name} calls it "
          f"outside `{GUARD}` (worker processes would run the script again)", file=sys.stderr)
    return True


def unguarded_script(frame: FrameType | None) -> Path | None:
    """The main script, when `frame`'s call chain starts at its top level outside the guard
    and worker processes would import it again; otherwise None (an interactive session,
    `python -c`, a notebook, a package's `__main__`, or a guarded call)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None:
        return None
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if name == "__main__" or name.endswith(".__main__"):  # multiprocessing leaves those alone
        return None
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is vars(main):
            break
        frame = frame.f_back
    else:
        return None  # called from elsewhere (a thread, an atexit hook): not the import
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    line = frame.f_lineno
    guarded = any(_is_guard(node) and any(s.lineno <= line <= (s.end_lineno or s.lineno)
                                          for s in node.body)
                  for node in ast.walk(tree) if isinstance(node, ast.If))
    return None if guarded else Path(path)


def _is_guard(node: ast.If) -> bool:
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]
