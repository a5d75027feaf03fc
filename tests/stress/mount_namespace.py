"""A private mount namespace for file-system faults no chmod can make: a full disk (a small
tmpfs, so writes really fail with ENOSPC) and a read-only file system (a read-only bind mount,
EROFS).

Why a namespace: mounting in the machine's own namespace would be seen by every other process
and would outlive a crashed test. Here a `sh` holds a namespace of its own open until its stdin
closes (so it ends with the driver, however the driver ends); servers are started inside it
with `nsenter`, and the driver reads the files there through `/proc/<holder>/root`. When the
last process inside exits, the kernel drops the namespace and its mounts.

Needs util-linux's `unshare`/`nsenter` and the privilege to mount (root, or CAP_SYS_ADMIN);
a failure raises NamespaceUnavailable saying precisely what is missing, for a skip reason.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

TIMEOUT_S = 20.0


class NamespaceUnavailable(RuntimeError):
    pass


class MountNamespace:
    def __init__(self) -> None:
        for tool in ("unshare", "nsenter", "mount"):
            if shutil.which(tool) is None:
                raise NamespaceUnavailable(f"`{tool}` (util-linux) is not installed")
        self._holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", "echo ready; read _"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._holder.stdout is not None and self._holder.stderr is not None
        self.pid = self._holder.pid
        if self._holder.stdout.readline() != b"ready\n":
            problem = self._holder.stderr.read().decode(errors="replace").strip()
            self.close()
            raise NamespaceUnavailable(f"`unshare --mount` failed: {problem}")

    def argv_prefix(self) -> list[str]:
        """Prepend to a command line to run it inside the namespace."""
        return ["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", "--"]

    def view(self, path: Path) -> Path:
        """`path` as seen inside the namespace, readable from outside it."""
        return Path(f"/proc/{self.pid}/root") / path.resolve().relative_to("/")

    def run(self, *command: str) -> None:
        done = subprocess.run(
            [*self.argv_prefix(), *command], capture_output=True, timeout=TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            problem = done.stderr.decode(errors="replace").strip()
            raise NamespaceUnavailable(f"`{' '.join(command)}` failed: {problem}")

    def mount_tmpfs(self, directory: Path, size_bytes: int) -> None:
        self.run("mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(directory))

    def resize_tmpfs(self, directory: Path, size_bytes: int) -> None:
        self.run("mount", "-o", f"remount,size={size_bytes}", str(directory))

    def bind_read_only(self, directory: Path) -> None:
        """The directory, as it is, on a read-only mount of itself (two steps: older kernels
        ignore `ro` on the bind itself)."""
        self.run("mount", "--bind", str(directory), str(directory))
        self.run("mount", "-o", "remount,bind,ro", str(directory))

    def make_writable(self, directory: Path) -> None:
        self.run("mount", "-o", "remount,bind,rw", str(directory))

    def close(self) -> None:
        """End the holder (its stdin closes, `read` returns); the namespace goes when the last
        process inside it exits."""
        for stream in (self._holder.stdin, self._holder.stdout, self._holder.stderr):
            if stream is not None:
                stream.close()
        self._holder.wait(TIMEOUT_S)
