"""Puts tests/contract on sys.path so a driver run as a script can import the contract client."""

from __future__ import annotations

import sys
from pathlib import Path

CONTRACT_DIR = Path(__file__).resolve().parents[1] / "contract"
if str(CONTRACT_DIR) not in sys.path:
    sys.path.insert(0, str(CONTRACT_DIR))
