"""``python -m bitsift.pipeline [--warn]``: check for the Java 17+ that Spark needs (the Makefile's
check; see :func:`bitsift.pipeline.session.main`)."""

import sys

from bitsift.pipeline.session import main

sys.exit(main())
