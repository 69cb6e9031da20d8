"""A job's ``kinetic.Data``, on the job's side: staged before the function runs (``stage``),
from ``gs://`` in bulk (``transfer``), from the Hugging Face hub (``hf``), at the volume paths
of a local job's private mount namespace (``namespace``).

Importing this package loads neither the GCS client nor ``datasets``: each is imported where it
is first used.
"""
