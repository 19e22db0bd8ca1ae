"""Which files of a work dir a call created or changed, and serving one of them safely.

The work dir is writable by sandboxed code, which may plant symlinks (to /etc/shadow, say)
or swap directories while the worker looks: the worker, which is root, never follows a link
in it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Bounds the worker's time on a work dir that sandboxed code filled with tiny files.
MAX_LISTED_ENTRIES = 10_000

Signature = tuple[int, int, int]


def snapshot(root: Path) -> dict[str, Signature]:
    """Regular files under root (relative path -> inode, size, mtime), links not followed."""
    found: dict[str, Signature] = {}
    seen = 0
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            seen += 1
            if seen > MAX_LISTED_ENTRIES:
                return found
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(path, root)] = (info.st_ino, info.st_size, info.st_mtime_ns)
        dirnames.sort()
    return found


def changed_files(before: dict[str, Signature], after: dict[str, Signature]) -> list[str]:
    return sorted(path for path, signature in after.items() if before.get(path) != signature)


def open_beneath(root: Path, relative: str) -> int:
    """Open a regular file under root for reading, refusing '..', absolute paths and any
    symlink on the way (component by component, so nothing can be swapped in between).
    Raises FileNotFoundError for all of these, as for a missing file."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts or any(part == ".." for part in parts) or relative.startswith("/"):
        raise FileNotFoundError(relative)
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
            except (NotADirectoryError, OSError) as error:
                raise FileNotFoundError(relative) from error
            os.close(directory)
            directory = child
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
        except OSError as error:
            raise FileNotFoundError(relative) from error
    finally:
        os.close(directory)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileNotFoundError(relative)
    return fd
