"""Start a command under a resource fault that the kernel enforces, then get out of the way.

    python fault_launcher.py [--obey-file-modes] [--max-file-bytes N] -- COMMAND...

Both settings are made in this process and survive `execv`, so COMMAND (a real `memproc serve`)
runs unmodified:

- `--obey-file-modes`: root ignores file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so a
  chmod'ed read-only directory would not be read-only for a server run as root, as CI runs.
  Dropping both from the capability bounding set here means the exec'd process never gets them
  back. Not root: nothing to drop, modes already apply.
- `--max-file-bytes N`: RLIMIT_FSIZE, the kernel's per-process file size limit (`ulimit -f`).
  A write past it fails with EFBIG, as a full disk fails with ENOSPC. SIGXFSZ, which would
  kill the process instead, is ignored; an ignored signal stays ignored across exec.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import sys

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2


def obey_file_modes() -> None:
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"cannot drop capability {capability} (needs CAP_SETPCAP)")


def limit_file_size(max_bytes: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--obey-file-modes", action="store_true")
    parser.add_argument("--max-file-bytes", type=int)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    try:
        if args.obey_file_modes:
            obey_file_modes()
        if args.max_file_bytes is not None:
            limit_file_size(args.max_file_bytes)
    except OSError as exc:
        sys.exit(f"fault_launcher: {exc}")  # one line, which the driver's skip reason quotes
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
