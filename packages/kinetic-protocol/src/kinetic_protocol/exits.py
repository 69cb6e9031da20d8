"""Exit statuses with a meaning of their own between the runtime and its backends.

Standard library only (nothing at all): a local job's supervisor, which starts per job and
loads nothing but the standard library, reads them too.
"""

__all__ = ["EXIT_NO_SPACE"]

EXIT_NO_SPACE = 87
"""The runtime's exit status when the disk (or quota) it writes to was full before the function
ran, or when its result could not be stored for lack of room: an infrastructure fault, which
the local backend's supervisor meets by running the job again after a pause."""
