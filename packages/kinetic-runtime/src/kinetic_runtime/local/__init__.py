"""The processes that run local jobs: a per-job supervisor and a forking launcher.

They live in the runtime, not the client, so a local job's processes load only the runtime,
``kinetic_protocol`` and the standard library, as a pod does. The client
(``kinetic.local``) starts them as modules::

    python -m kinetic_runtime.local.supervisor JOB_DIR
    python -m kinetic_runtime.local.launcher SOCKET_PATH

Importing this package imports nothing, so the supervisor starts fast.
"""
