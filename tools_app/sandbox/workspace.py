"""Where a container lives on a node: its work dir and its saved session, a copy of what
the shared storage holds (tools_app/container_store.py).

    CONTAINERS_DIR/<container id>/      root-owned, never visible in the sandbox
        synced_version                  the version of the container this copy holds
        data/                           bound at /mnt/data: the files the model works on
        session/                        bound at /mnt/session: the pickled namespace
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

CONTAINER_ID_PATTERN = re.compile(r"^cntr_[A-Za-z0-9]{1,64}$")
# Each container runs as its own uid so that RLIMIT_NPROC (counted per uid) counts only that
# container's processes. The range is far above the uids that systems hand out to people,
# services and rootless containers' subordinate ranges.
SANDBOX_UID_BASE = 1_500_000_000
SANDBOX_UID_SPAN = 100_000_000


def sandbox_uid(container_id: str) -> int:
    digest = hashlib.sha256(container_id.encode()).digest()
    return SANDBOX_UID_BASE + int.from_bytes(digest[:8], "big") % SANDBOX_UID_SPAN


@dataclass(frozen=True)
class Workspace:
    root: Path
    # The uid the sandbox runs as, when the worker is root; None when the worker is not root
    # and the sandbox runs as the worker's own uid inside a user namespace.
    uid: int | None

    @classmethod
    def for_container(cls, container_id: str) -> Workspace:
        if not CONTAINER_ID_PATTERN.match(container_id):
            raise ValueError(f"Not a container id: {container_id!r}")
        uid = sandbox_uid(container_id) if os.geteuid() == 0 else None
        return cls(root=Path(settings.CONTAINERS_DIR) / container_id, uid=uid)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def session_dir(self) -> Path:
        return self.root / "session"

    def create(self) -> None:
        """Make the dirs (idempotent); the sandbox's uid owns exactly data/ and session/."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path in (self.data_dir, self.session_dir):
            path.mkdir(mode=0o700, exist_ok=True)
            if self.uid is not None:
                os.chown(path, self.uid, self.uid)

    def remove(self) -> None:
        # rmtree does not follow symlinks that sandboxed code may have planted.
        shutil.rmtree(self.root, ignore_errors=True)
