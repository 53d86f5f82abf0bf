"""Run the commands a document shows and compare (or rewrite) the outputs it shows.

    python -m scripts.shown_outputs            # check every document; exit 1 on a difference
    python -m scripts.shown_outputs --write    # rewrite the shown outputs from a fresh run
    python -m scripts.shown_outputs docs/walkthrough-api.md

What runs, in one bash shell per document (variables carry from block to block),
in a fresh temporary directory (with `scenarios/` linked in):

- a ```bash block; the fenced block right after it (json, text or console,
  only blank lines between) is its shown output. A bash block that prints
  something must have one.
- a ```python block, the same way: it is saved as a file and runs as a script with
  this Python (`python .snippet-N.py`, as a planner runs `python script.py`).
- a ```console block: each `$ command` line runs; the lines below it, up to
  the next `$`, are its shown output. `$ sim serve ...` starts the server in
  the background (stopping the previous one) and its shown output is the
  banner it prints before answering.
- `<!-- file: NAME -->` on the line before a block writes the block to NAME
  first (a scenario file the next commands use).

A document a reader comes to right after the README (`AFTER_README`) starts
where the README's first command left off: that command (less its `pip install`)
runs first, and must succeed.

Documents say port 8080; the servers of a document run on one free port and
the outputs are written back with 8080. Wall-clock times that `sim run` and
`sim sweep` print on their own lines (outside the indented summary table) are
not compared. Everything else must match exactly:
ids, timestamps and counts come from the seeded simulation.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("docs/quickstart.md", "docs/scenarios.md", "docs/walkthrough-api.md",
             "docs/walkthrough-auth.md", "docs/reliability.md")
#: documents read right after the README: its first command has run in their directory
AFTER_README = ("docs/quickstart.md",)
SHOWN_PORT = "8080"
OUTPUT_LANGUAGES = ("json", "text", "console")
FENCE = re.compile(r"^```(\S*)")
FILE_DIRECTIVE = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")
# `sim run` and `sim sweep` report wall-clock times on their own lines (not on the indented
# lines of the summary table, whose times are simulated); those vary from run to run
TIMED_COMMAND = re.compile(r"^(?:sim|python -m sim) (?:run|sweep)\b")
WALL_CLOCK_TIME = re.compile(r"\b\d+(?:[.,]\d+)* ?(?:ms|s|min)\b")
#: `sim serve ...`, maybe after settings of the environment (`SIM_API_KEY=... sim serve`)
SERVE = re.compile(r"^((?:\w+=\S*\s+)*)(sim serve\b.*)$")
SERVER_START_ATTEMPTS = 1200  # x 0.05 s: a busy machine may take long to import the server


@dataclass
class Block:
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line
    language: str
    lines: list[str]
    file_name: str | None = None


@dataclass
class Step:
    """Something to run and the output the document shows for it."""

    command: str
    shown: list[str]
    line: int  # 1-based line of the command in the document, for messages
    output_block: Block | None = None  # a bash step's output block
    console: tuple[Block, int] | None = None  # a console step: its block and the index of its `$` line
    actual: list[str] = field(default_factory=list)


def parse_blocks(lines: list[str]) -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: a fenced block is never closed")
        previous = lines[i - 1] if i > 0 else ""
        directive = FILE_DIRECTIVE.match(previous)
        blocks.append(Block(i, j, opening.group(1), lines[i + 1:j],
                            directive.group(1) if directive else None))
        i = j + 1
    return blocks


def _only_blank_between(lines: list[str], a: Block, b: Block) -> bool:
    return all(not line.strip() for line in lines[a.end + 1:b.start])


def plan_steps(lines: list[str]) -> tuple[list[Step | Block], list[Block]]:
    """The document's steps in order (a Block in the list is a file to write)."""
    blocks = parse_blocks(lines)
    steps: list[Step | Block] = []
    used_as_output: set[int] = set()
    for k, block in enumerate(blocks):
        if block.file_name is not None:
            steps.append(block)
        if k in used_as_output:
            continue
        if block.language in ("bash", "python"):
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            output = None
            if (nxt is not None and nxt.language in OUTPUT_LANGUAGES and nxt.file_name is None
                    and _only_blank_between(lines, block, nxt)):
                output = nxt
                used_as_output.add(k + 1)
            command = "\n".join(block.lines)
            if block.language == "python":  # as a planner's script.py, not from stdin
                script = f".snippet-{block.start + 2}.py"
                command = (f"cat > {script} <<'END_OF_PYTHON'\n{command}\nEND_OF_PYTHON\n"
                           f"{shlex.quote(sys.executable)} {script}")
            steps.append(Step(command, output.lines if output else [],
                              block.start + 2, output_block=output))
        elif block.language == "console":
            steps.extend(_console_steps(block))
    return steps, blocks


def _console_steps(block: Block) -> list[Step]:
    steps: list[Step] = []
    for n, text in enumerate(block.lines):
        if text.startswith("$ "):
            steps.append(Step(text[2:], [], block.start + 2 + n, console=(block, n)))
        elif steps:
            steps[-1].shown.append(text)
        else:
            raise ValueError(f"line {block.start + 2 + n}: a console block must begin with `$ `")
    return steps


def comparable(step: Step, lines: list[str]) -> list[str]:
    if not TIMED_COMMAND.match(step.command):
        return lines
    return [line if line[:1].isspace() else WALL_CLOCK_TIME.sub("<time>", line) for line in lines]


class Session:
    """One bash shell and at most one `sim serve`, in a temporary directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port: str | None = None
        self.server: subprocess.Popen[bytes] | None = None
        self.env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb",
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.shell = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=workdir, env=self.env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
        self.count = 0

    def _to_server_port(self, text: str) -> str:
        if self.port is None:
            return text
        return (text.replace(f"127.0.0.1:{SHOWN_PORT}", f"127.0.0.1:{self.port}")
                .replace(f"--port {SHOWN_PORT}", f"--port {self.port}"))

    def _to_shown_port(self, text: str) -> str:
        return text if self.port is None else text.replace(f"127.0.0.1:{self.port}",
                                                           f"127.0.0.1:{SHOWN_PORT}")

    def run(self, command: str) -> list[str]:
        if SERVE.match(command):
            return self.serve(command)
        self.count += 1
        script = self.workdir / f".step-{self.count}.sh"
        script.write_text(self._to_server_port(command) + "\n")
        sentinel = f"__step_{self.count}_done__"
        assert self.shell.stdin is not None and self.shell.stdout is not None
        self.shell.stdin.write(f"source {script.name} < /dev/null\nprintf '%s\\n' {sentinel}\n")
        self.shell.stdin.flush()
        out: list[str] = []
        for line in self.shell.stdout:
            line = line.rstrip("\n")
            if line.endswith(sentinel):  # after output that did not end its last line, on that line
                if line != sentinel:
                    out.append(line[:-len(sentinel)])
                break
            out.append(line)
        else:
            raise RuntimeError(f"the shell ended while running: {command}")
        return [self._to_shown_port(line) for line in out]

    def serve(self, command: str) -> list[str]:
        self.stop_server()
        # one port for the whole document: the shell's variables keep the address
        self.port = self.port or str(_free_port())
        log = self.workdir / f".server-{self.port}.out"
        with open(log, "wb") as sink:
            settings, serve = SERVE.match(command).groups()  # type: ignore[union-attr]
            exports = "".join(f"export {word}; " for word in settings.split())
            self.server = subprocess.Popen(["bash", "-c",
                                            exports + "exec " + self._to_server_port(serve)],
                                           cwd=self.workdir, env=self.env, stdout=sink,
                                           stderr=subprocess.DEVNULL)
        # wait on the socket alone: an HTTP probe would take a request id the document shows
        for _ in range(SERVER_START_ATTEMPTS):
            if self.server.poll() is not None:
                raise RuntimeError(f"`{command}` exited with {self.server.returncode}: "
                                   f"{log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", int(self.port)), timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"`{command}` did not answer on port {self.port}")
        return [self._to_shown_port(line) for line in log.read_text().splitlines()]

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.terminate()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
            self.server = None

    def close(self) -> None:
        self.stop_server()
        self.shell.communicate()  # closes the shell's input, reads it to the end, waits


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_commands() -> list[str]:
    """The README's first block, as a reader runs it in a checkout where the simulator is
    installed already: each line's commands less `pip install`, and less the test suite
    (a document's step is no place to run the whole suite)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    first = next(b for b in parse_blocks(lines) if b.language == "bash")
    commands = [part.strip() for line in first.lines for part in line.split("&&")]
    return [c for c in commands if c and not c.startswith(("pip install", "python -m pytest"))]


def run_document(path: Path) -> tuple[list[str], list[Step]]:
    """Run every step of one document; return its lines and the steps with their outputs."""
    lines = path.read_text().splitlines()
    steps, _ = plan_steps(lines)
    with tempfile.TemporaryDirectory(prefix="shown-outputs-") as tmp:
        workdir = Path(tmp)
        (workdir / "scenarios").symlink_to(ROOT / "scenarios")
        session = Session(workdir)
        try:
            if _relative(path) in AFTER_README:
                for command in readme_commands():
                    failed = session.run(f"{command} > .readme.out 2>&1 || cat .readme.out")
                    if failed:
                        raise RuntimeError(f"the README's `{command}` failed:\n"
                                           + "\n".join(failed))
            for step in steps:
                if isinstance(step, Block):
                    (workdir / str(step.file_name)).write_text("\n".join(step.lines) + "\n")
                else:
                    step.actual = session.run(step.command)
        finally:
            session.close()
    return lines, [s for s in steps if isinstance(s, Step)]


def differences(path: Path, steps: list[Step]) -> list[str]:
    """One unified diff per step whose shown output is not what it prints now."""
    found = []
    for step in steps:
        if step.output_block is None and step.console is None and step.actual:
            found.append(f"{path}:{step.line}: this block prints output but the document shows none:\n"
                         + "\n".join(step.actual))
        elif comparable(step, step.shown) != comparable(step, step.actual):
            diff = difflib.unified_diff(step.shown, step.actual, "shown", "printed now", lineterm="")
            found.append(f"{path}:{step.line}: `{step.command.splitlines()[0]}`\n" + "\n".join(diff))
    return found


def rewrite(lines: list[str], steps: list[Step]) -> list[str]:
    """The document with every shown output replaced by what its step printed."""
    replacements: dict[int, tuple[int, list[str]]] = {}  # opening fence -> (closing fence, body)
    console: dict[int, tuple[Block, list[str]]] = {}
    for step in steps:
        if step.output_block is not None:
            block = step.output_block
            replacements[block.start] = (block.end, step.actual)
        elif step.console is not None:
            block, _ = step.console
            body = console.setdefault(block.start, (block, []))[1]
            body.append("$ " + step.command)
            body.extend(step.actual)
    for start, (block, body) in console.items():
        replacements[start] = (block.end, body)
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replacements:
            end, body = replacements[i]
            out.append(lines[i])
            out.extend(body)
            out.append(lines[end])
            i = end + 1
        else:
            out.append(lines[i])
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.shown_outputs",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("documents", nargs="*", default=list(DOCUMENTS),
                        help="markdown files (default: the documents with shown outputs)")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the shown outputs with what the commands print now")
    args = parser.parse_args(argv)
    for tool in ("bash", "curl", "jq"):
        if shutil.which(tool) is None:
            print(f"shown_outputs: needs `{tool}` on PATH", file=sys.stderr)
            return 2
    failed = False
    for name in args.documents:
        path = Path(name) if Path(name).is_absolute() else ROOT / name
        lines, steps = run_document(path)
        if args.write:
            new = rewrite(lines, steps)
            if new != lines:
                path.write_text("\n".join(new) + "\n")
                print(f"{name}: shown outputs rewritten")
            else:
                print(f"{name}: unchanged")
        else:
            found = differences(Path(name), steps)
            failed |= bool(found)
            for text in found:
                print(text + "\n")
            print(f"{name}: {len(steps)} steps, {len(found)} differ")
    if failed:
        print("rewrite them with: python -m scripts.shown_outputs --write  (then review the diff)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
