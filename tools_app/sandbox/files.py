"""Which files of a work dir a call created or changed, and reading, writing or deleting
one of them safely.

The work dir is writable by sandboxed code, which may plant symlinks (to /etc/shadow, say)
or swap directories while the worker looks: the worker, which is root, never follows a link
in it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

# Bounds the worker's time on a work dir that sandboxed code filled with tiny files.
MAX_LISTED_ENTRIES = 10_000
# The longest path a container file is stored under (ContainerFile.path).
MAX_PATH_LENGTH = 1024

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
            relative = os.path.relpath(path, root)
            if stat.S_ISREG(info.st_mode) and nameable(relative):
                found[relative] = (info.st_ino, info.st_size, info.st_mtime_ns)
        dirnames.sort()
    return found


def nameable(relative: str) -> bool:
    """Whether the API can name this file: model-run code may write any bytes as a name,
    but a file is listed, stored and served only under a UTF-8 path that fits its column
    (os.walk hands undecodable bytes over as lone surrogates, which UTF-8 refuses)."""
    if len(relative) > MAX_PATH_LENGTH:
        return False
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def changed_files(before: dict[str, Signature], after: dict[str, Signature]) -> list[str]:
    return sorted(path for path, signature in after.items() if before.get(path) != signature)


def open_beneath(root: Path, relative: str) -> int:
    """Open a regular file under root for reading, refusing '..', absolute paths and any
    symlink on the way (component by component, so nothing can be swapped in between).
    Raises FileNotFoundError for all of these, as for a missing file."""
    directory, name = _parent(root, relative)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError as error:
        raise FileNotFoundError(relative) from error
    finally:
        os.close(directory)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileNotFoundError(relative)
    return fd


def write_beneath(root: Path, name: str, chunks: Iterable[bytes], uid: int | None) -> int:
    """Write a file named ``name`` directly in root (replacing a regular file of that name,
    never following a link planted there), owned by ``uid`` when given. Returns its size."""
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644,
                         dir_fd=directory)
        except OSError as error:  # a link or a directory of that name
            raise FileExistsError(name) from error
    finally:
        os.close(directory)
    size = 0
    with os.fdopen(fd, "wb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise FileExistsError(name)
        for chunk in chunks:
            file.write(chunk)
            size += len(chunk)
        if uid is not None:
            os.fchown(file.fileno(), uid, uid)
    return size


def write_path_beneath(root: Path, relative: str, chunks: Iterable[bytes], uid: int | None) -> int:
    """Write a file at ``relative`` under root, making its directories (owned by ``uid``
    when given) and following no link on the way."""
    parts = _parts(relative)
    directory = root
    for part in parts[:-1]:
        directory = directory / part
        try:
            os.mkdir(directory, 0o755)
            if uid is not None:
                os.chown(directory, uid, uid, follow_symlinks=False)
        except FileExistsError:
            pass
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            raise FileExistsError(relative)
    return write_beneath(directory, parts[-1], chunks, uid)


def unlink_beneath(root: Path, relative: str) -> None:
    """Delete a file under root, following no link on the way (FileNotFoundError if absent)."""
    directory, name = _parent(root, relative)
    try:
        os.unlink(name, dir_fd=directory)
    except OSError as error:
        raise FileNotFoundError(relative) from error
    finally:
        os.close(directory)


def _parent(root: Path, relative: str) -> tuple[int, str]:
    """An open fd of the directory that holds ``relative`` under root, and the file's name."""
    parts = _parts(relative)
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    for part in parts[:-1]:
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
        except OSError as error:
            os.close(directory)
            raise FileNotFoundError(relative) from error
        os.close(directory)
        directory = child
    return directory, parts[-1]


def _parts(relative: str) -> list[str]:
    """The components of a relative path that stays under its root (FileNotFoundError otherwise)."""
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts or any(part == ".." for part in parts) or relative.startswith("/"):
        raise FileNotFoundError(relative)
    return parts
