"""A batch's bookkeeping in the store: its signed records (manifest, one record per attempt,
leases, completion, cancellations), the outcomes and failures a collection kept before it
deleted children, and whether a child was collected and cleaned up.

It only reads and writes stored objects, so both a job's handle (a batch child's kept outcome,
its cleaned-up state, its batch's cancellation) and the batch engine (:mod:`kinetic.batch`)
build on it; it imports neither.
"""
