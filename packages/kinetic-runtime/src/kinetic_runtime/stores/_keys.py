"""Key and prefix checks shared by every store, so a key means the same thing everywhere.

Keys are relative, ``/``-separated paths (see :mod:`kinetic_protocol.layout`). A key that could
climb out of a store's root on disk (``..``, an absolute path) is refused by every store, even
where the backing service would accept it, so code that works on GCS also works locally.
"""

from kinetic_protocol.errors import ConfigError

__all__ = ["check_key", "check_prefix"]

_FORBIDDEN_SEGMENTS = frozenset({"", ".", ".."})


def check_key(key: str) -> str:
    """Return ``key`` unchanged if it is a valid object key; raise ``ConfigError`` if not."""
    if not isinstance(key, str) or not key:
        raise ConfigError(f"Invalid object key {key!r}: a key must be a non-empty string.")
    _check_path(key, what="key")
    return key


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is ``""`` or the start of a valid key; raise ``ConfigError``.

    A prefix is matched as a plain string (``jobs/1`` matches ``jobs/10/x``), as GCS does; end it
    with ``/`` to select one directory.
    """
    if not isinstance(prefix, str):
        raise ConfigError(f"Invalid key prefix {prefix!r}: a prefix must be a string.")
    if prefix:
        # The final segment may be a partial name, or empty after a trailing "/".
        _check_path(prefix.removesuffix("/") or "/", what="prefix", value=prefix)
    return prefix


def _check_path(path: str, *, what: str, value: str | None = None) -> None:
    shown = path if value is None else value
    if path.startswith("/") or "\\" in path or "\x00" in path:
        raise ConfigError(
            f"Invalid object {what} {shown!r}: use a relative '/'-separated path "
            "without a leading '/', backslashes or NUL characters, e.g. 'jobs/abc/handle.json'."
        )
    bad = [segment for segment in path.split("/") if segment in _FORBIDDEN_SEGMENTS]
    if bad:
        raise ConfigError(
            f"Invalid object {what} {shown!r}: empty, '.' and '..' path segments are not "
            "allowed, since they could escape the store's root. Use e.g. 'jobs/abc/handle.json'."
        )
