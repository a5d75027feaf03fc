"""Serve as `memproc serve` does, and record every module imported when the first response is
written. Background work (opening the store, loading models) is not on that path and is left
out. Usage: python first_response_modules.py OUT.json DB MODELS_DIR  (then send one line)."""

from __future__ import annotations

import json
import sys
from typing import Any

from memproc.runtime import Runtime
from memproc.server import framing

_write = framing.LineWriter.write
_recorded: list[bool] = []


def write_and_record(self: Any, line: bytes) -> bool:
    if not _recorded:
        _recorded.append(True)
        with open(sys.argv[1], "w") as out:
            json.dump(sorted(sys.modules), out)
    return _write(self, line)


framing.LineWriter.write = write_and_record  # type: ignore[method-assign]
Runtime.start = lambda self, progress=None: None  # type: ignore[method-assign]

if __name__ == "__main__":
    from memproc.cli import main

    sys.exit(main(["serve", "--db", sys.argv[2], "--models-dir", sys.argv[3]]))
