"""Write docs/settings.md, the site's Settings page, from the table of environment variables
in project/environment.py, the one project/settings.py reads them through, so that the page
cannot drift from the settings. ``make docs`` and ``make test`` run it before MkDocs; the
page is not kept in git.

    .venv/bin/python scripts/settings_reference.py [--output docs/settings.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from project.environment import VARIABLES, Section, Variable  # noqa: E402

# The page's prose; each {section} is that section's table.
PAGE = """# Settings

## Configuration

Everything is read from the environment (`project/settings.py`); the defaults are the
embedded setup of `make run`. The tables are generated from the one that the settings read
the environment through, `project/environment.py` (`scripts/settings_reference.py`, run by
`make docs`).

{configuration}

Beat's periods are whole seconds (the database scheduler keeps intervals as integers).

Used by `make run` and the `Procfile` only:

{processes}
"""
HEADER = ["| Variable | Default | Meaning |", "| --- | --- | --- |"]


def default_cell(variable: Variable) -> str:
    if variable.documented_default is not None:
        return variable.documented_default
    return f"`{variable.default}`" if variable.default else "—"


def row(variable: Variable) -> str:
    return f"| `{variable.name}` | {default_cell(variable)} | {variable.meaning} |"


def table(section: Section) -> str:
    return "\n".join(HEADER + [row(variable) for variable in VARIABLES if variable.section == section])


def page() -> str:
    return PAGE.format(configuration=table("configuration"), processes=table("processes"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "settings.md")
    args = parser.parse_args()
    args.output.write_text(page())
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
