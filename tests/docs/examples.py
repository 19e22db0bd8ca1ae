"""The code examples of README.md and docs/: every ``python``, ``sh`` and ``js`` (or
``javascript``) block, found by its file and line. The pages are the ``*.md`` files of docs/
itself, not of its subfolders: a page of examples stays flat in docs/. A block that cannot
run against the test stack (a GPU node's command, one that needs a model that decides to
call a tool) says so on the line before it, with its reason, as an HTML comment that
neither GitHub nor the site shows:

    <!-- not run: the reason -->

``python -m tests.docs.examples`` prints how many are run and the reason of each that is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("python", "sh", "js", "javascript")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Example:
    path: str  # relative to the repository
    line: int  # of the opening fence
    language: str
    code: str
    not_run: str | None  # the reason it is not run

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples() -> list[Example]:
    found = []
    for document in documents():
        text = document.read_text()
        for block in BLOCK.finditer(text):
            if block.group(1) not in LANGUAGES:
                continue
            before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            found.append(Example(str(document.relative_to(ROOT)), text.count("\n", 0, block.start()) + 1,
                                 block.group(1), block.group(2), reason.group(1) if reason else None))
    return found


def summary() -> str:
    found = examples()
    skipped = [example for example in found if example.not_run]
    lines = [f"docs examples: {len(found) - len(skipped)} run by tests/docs/test_examples.py, "
             f"{len(skipped)} not run:"]
    lines += [f"  {example.name} ({example.language}): {example.not_run}" for example in skipped]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary())
