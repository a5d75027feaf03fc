"""`python -m memproc` runs the same entry point as the `memproc` console script."""

import sys

from memproc.cli import main

sys.exit(main())
