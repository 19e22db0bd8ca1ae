"""The sandbox side of one code interpreter call: the first process inside bubblewrap.

It runs under ``python -I`` with the standard library and dill only: it is bound read-only
into the sandbox, where the project does not exist. Contract with tools_app.sandbox.execute:
argv[1] is a JSON config, the cell's code arrives on stdin, everything printed is the cell's
logs, and the outcome is one JSON object written to the result fd.
"""

from __future__ import annotations

import json
import os
import sys
import types


def drop_privileges(uid: int | None) -> None:
    # Started as root (with only CAP_SETUID/CAP_SETGID) so that the sandbox can run as the
    # container's own uid: this must happen before anything untrusted is read.
    if uid is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        os._exit(70)


def apply_limits(config: dict) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (config["memory_bytes"], config["memory_bytes"]))
    # SIGXCPU at the soft limit; the hard limit one second later is a SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (config["cpu_s"], config["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_NPROC, (config["max_processes"], config["max_processes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (config["file_bytes"], config["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def main() -> None:
    config = json.loads(sys.argv[1])
    drop_privileges(config["uid"])
    apply_limits(config)
    os.chdir(config["work_dir"])
    runner_pid = os.getpid()
    code = sys.stdin.read()
    result_file = os.fdopen(config["result_fd"], "w")

    # The cell's namespace is a fresh __main__, installed before dill is imported: dill binds
    # `__main__` at import time, and it must save the user's namespace, not this script.
    user_main = types.ModuleType("__main__")
    user_main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = user_main

    import ast
    import linecache
    import traceback

    import dill

    notes: list[str] = []
    session_path = config["session_path"]
    if os.path.exists(session_path):
        try:
            dill.load_module(session_path)
        except BaseException as error:  # noqa: B036 - a broken session must never stop the cell
            notes.append(f"[note: the saved session could not be restored ({type(error).__name__}: {error}); "
                         "variables from earlier calls are gone]")
    # Like a notebook: modules written to the work dir are importable.
    sys.path.insert(0, "")

    outcome: dict[str, str | int | None] = {"exception": None, "errno": None, "traceback": None}
    cell_name = config["cell_name"]
    try:
        tree = ast.parse(code, filename=cell_name)
        last_expression = None
        if tree.body and isinstance(last := tree.body[-1], ast.Expr):
            tree.body.pop()
            last_expression = ast.Expression(last.value)
        linecache.cache[cell_name] = (len(code), None, code.splitlines(True), cell_name)
        exec(compile(tree, cell_name, "exec"), user_main.__dict__)
        if last_expression is not None:
            value = eval(compile(last_expression, cell_name, "eval"), user_main.__dict__)
            if value is not None:
                user_main.__dict__["_"] = value
                print(repr(value))
    except BaseException as error:  # noqa: B036 - the cell's failure is the result, not ours
        if os.getpid() != runner_pid:
            # A process the cell forked must not report or save the session.
            os._exit(1)
        if isinstance(error, SyntaxError):
            lines = traceback.format_exception_only(type(error), error)
        else:
            assert error.__traceback__ is not None  # a caught exception always has one
            lines = traceback.format_exception(type(error), error, error.__traceback__.tb_next)
        text = "".join(lines if lines else [f"{type(error).__name__}: {error}\n"])
        sys.stderr.write(text)
        errno = getattr(error, "errno", None)
        outcome = {"exception": type(error).__name__, "errno": errno if isinstance(errno, int) else None,
                   "traceback": "".join(lines[-4:])[-2000:]}
    if os.getpid() != runner_pid:
        sys.stdout.flush()
        os._exit(0)

    notes.extend(save_session(dill, user_main, session_path))
    for note in notes:
        print(note)
    sys.stdout.flush()
    sys.stderr.flush()
    json.dump(outcome, result_file)
    result_file.flush()


def save_session(dill: types.ModuleType, user_main: types.ModuleType, session_path: str) -> list[str]:
    """Save the namespace for the next call; drop what cannot be pickled, with a note."""
    notes: list[str] = []
    temporary = session_path + ".tmp"
    try:
        dill.dump_module(temporary, refimported=True)
    except Exception:
        dropped: list[str] = []
        for name, value in list(vars(user_main).items()):
            if name.startswith("__"):
                continue
            try:
                dill.dumps(value)
            except Exception:
                dropped.append(f"{name} ({type(value).__name__})")
                delattr(user_main, name)
        if dropped:
            notes.append("[note: not kept for the next call, cannot be saved: " + ", ".join(dropped) + "]")
        try:
            dill.dump_module(temporary, refimported=True)
        except Exception as error:
            notes.append(f"[note: the session could not be saved ({type(error).__name__}: {error}); "
                         "the next call starts from the previous session]")
            try:
                os.unlink(temporary)
            except OSError:
                pass
            return notes
    os.replace(temporary, session_path)
    return notes


if __name__ == "__main__":
    main()
