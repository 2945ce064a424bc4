"""Shared test settings: hypothesis profiles chosen by the HYPOTHESIS_PROFILE environment variable.

``dev`` (the default) keeps a local run short; ``ci`` tries more examples; ``thorough`` is for a
quiet machine and an afternoon. No profile has a deadline: the test machine is shared and noisy,
and a slow example is not a wrong one.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile(
    "thorough", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
