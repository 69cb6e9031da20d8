"""Admission through Kueue: what a workload carries to be queued, the checks made before a
submission, and where a queued job stands."""
