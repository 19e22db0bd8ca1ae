"""Writing a file that other processes read while it may be replaced."""

from __future__ import annotations

from pathlib import Path


def write_atomically(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` whole: written beside it, then renamed over it, so that a
    reader sees the old file or the new one, never half of one."""
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(data)
    temporary.replace(path)
