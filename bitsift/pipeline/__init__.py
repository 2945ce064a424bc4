"""The PySpark pipeline: route recorded message datasets at cluster scale, with the same results
as :meth:`bitsift.SubscriptionIndex.match` for every row.

* :func:`route` gives ``(message_id, subscription_id[, client])`` pairs;
* :func:`annotate` adds a ``subscriptions`` array column instead of exploding;
* :func:`tag` is the accounting stage of the ``bitsift route`` job (one row out per row in, with
  a status and, for bad records, a reason); :func:`run_route_job` is the job itself.

See docs/spark.md. Importing this package does not import pyspark or need Java; the functions
import it when called.
"""

from bitsift.pipeline.job import RouteSummary, run_route_job
from bitsift.pipeline.routing import PipelineError, annotate, route, tag
from bitsift.pipeline.session import JavaMissingError, local_session, require_java

__all__ = [
    "JavaMissingError",
    "PipelineError",
    "RouteSummary",
    "annotate",
    "local_session",
    "require_java",
    "route",
    "run_route_job",
    "tag",
]
