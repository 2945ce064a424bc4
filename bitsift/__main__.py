"""``python -m bitsift``: the same as the ``bitsift`` command."""

import sys

from bitsift.cli import main

sys.exit(main())
