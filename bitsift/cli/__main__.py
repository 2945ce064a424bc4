"""``python -m bitsift.cli``: the same as the ``bitsift`` command."""

import sys

from bitsift.cli import main

sys.exit(main())
