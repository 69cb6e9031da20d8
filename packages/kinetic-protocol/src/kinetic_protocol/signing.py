"""Keyed MACs over what one side of a job writes and the other side unpickles or acts on.

The client signs a job's call (which pins the sha256 of its payload, code bundle and input
chunks) and a batch's manifest; the job signs its result and each host's failure. Anyone who
can write the store but cannot read the keys can still delete or garble objects, but cannot
make a client or a job unpickle bytes of their choosing: every reader checks the signature
over the exact stored bytes first.

A MAC covers ``(kind, subject, body)``: the subject is the job (or batch) id, so a result
copied from another job fails, and the kind keeps a call from passing as a result.

Stored forms:
- JSON records: ``{"kinetic_signature": {...}, "record": <the record, byte for byte>}``, so a
  person can still read them in a bucket (the MAC is over the raw bytes of ``record``);
- binary envelopes: a msgpack map of the same two fields with ``body`` the envelope's bytes.

A keyring is a set of keys by id plus the id of the one that signs. Rotation adds a key and
makes it current; old ones stay to verify what they signed. On disk (the Kinetic home, or a
Kubernetes Secret mounted in a pod) a keyring is one file per key, named by its id, holding
the key in hex, and a file ``current`` naming the signing key.
"""

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, TypeVar

import msgspec

from kinetic_protocol.errors import CorruptRecordError, IntegrityError, SigningKeyError
from kinetic_protocol.records import decode_json

__all__ = [
    "CURRENT_ENTRY",
    "Keyring",
    "SignedKind",
    "Signature",
    "open_blob",
    "open_json",
    "peek_json",
    "seal_blob",
    "seal_json",
]

SignedKind = Literal["call", "job", "batch", "batch-record", "result", "host-result"]
"""What a signed object is; part of the MAC, so one kind cannot stand in for another.
``batch-record`` is a batch's bookkeeping (child records, leases, ...), whose subject is its
own store key: a record copied to another key fails."""

CURRENT_ENTRY = "current"
"""The keyring entry that names the signing key."""

_KEY_ID = re.compile(r"^[0-9a-f]{16}$")
_KEY_HEX = re.compile(r"^[0-9a-f]{64}$")
_DOMAIN = b"kinetic-signature/1"
_T = TypeVar("_T")


class Signature(msgspec.Struct, frozen=True, kw_only=True):
    key_id: str
    mac: str
    """HMAC-SHA256, hex."""
    version: int = 1


class _SealedJson(msgspec.Struct):
    record: msgspec.Raw
    kinetic_signature: Signature | None = None


class _SealedBlob(msgspec.Struct):
    body: bytes
    kinetic_signature: Signature | None = None


def _new_key() -> tuple[str, bytes]:
    """A fresh key id and 32-byte key from the OS's CSPRNG: ``os.urandom`` is what ``secrets``
    wraps, without the ``random`` import that ``secrets`` adds to every job's start."""
    return os.urandom(8).hex(), os.urandom(32)


class Keyring:
    """The keys that sign and verify one user's (or one namespace's) jobs."""

    def __init__(self, keys: Mapping[str, bytes], current: str, *, source: str) -> None:
        if current not in keys:
            raise SigningKeyError(f"{source}: the current key {current!r} is not in the keyring.")
        self._keys = dict(keys)
        self.current = current
        self.source = source
        """Where the keys live, for messages ("~/.kinetic/keys", "Secret x in namespace y")."""
        self.retired: frozenset[str] = frozenset()
        """Keys :meth:`without` took out: the only ones a store of keys may delete, so a
        rotation that ran at the same time keeps the key it made."""

    @classmethod
    def generate(cls, *, source: str) -> "Keyring":
        key_id, key = _new_key()
        return cls({key_id: key}, key_id, source=source)

    def rotated(self) -> "Keyring":
        """This keyring plus a new key, which signs from now on."""
        key_id, key = _new_key()
        return Keyring({**self._keys, key_id: key}, key_id, source=self.source)

    def without(self, key_id: str) -> "Keyring":
        """This keyring less ``key_id`` (a key believed leaked); never the current one."""
        if key_id == self.current:
            raise SigningKeyError(
                f"{key_id} is the current signing key of {self.source}; rotate first, then "
                "retire it."
            )
        if key_id not in self._keys:
            raise SigningKeyError(f"{self.source} has no key {key_id!r}: {sorted(self._keys)}.")
        keys = {k: v for k, v in self._keys.items() if k != key_id}
        reduced = Keyring(keys, self.current, source=self.source)
        reduced.retired = self.retired | {key_id}
        return reduced

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._keys)

    @classmethod
    def from_entries(cls, entries: Mapping[str, str], *, source: str) -> "Keyring":
        """A keyring from its entries (file names or Secret keys to their text)."""
        current = entries.get(CURRENT_ENTRY, "").strip()
        keys: dict[str, bytes] = {}
        for name, text in entries.items():
            if name == CURRENT_ENTRY:
                continue
            if not _KEY_ID.match(name) or not _KEY_HEX.match(text.strip()):
                raise SigningKeyError(
                    f"{source}: entry {name!r} is not a Kinetic signing key (16 hex digits naming "
                    "64 hex digits). Remove it, or recreate the keys with `kinetic keys rotate`."
                )
            keys[name] = bytes.fromhex(text.strip())
        if not keys or not current:
            raise SigningKeyError(
                f"{source} holds no signing key (or no {CURRENT_ENTRY!r} entry naming one)."
            )
        return cls(keys, current, source=source)

    def entries(self) -> dict[str, str]:
        """The keyring as files or Secret data: key id to hex, and ``current``."""
        return {**{k: v.hex() for k, v in self._keys.items()}, CURRENT_ENTRY: self.current}

    @classmethod
    def from_directory(cls, path: Path, *, source: str | None = None) -> "Keyring":
        """Read a keyring directory (the Kinetic home's, or a mounted Secret's)."""
        where = source or str(path)
        try:
            # ``current`` first: a rotation writes its new key's file before ``current`` names
            # it, so the listing that follows holds that key. A key retired meanwhile is gone
            # from the listing or vanishes before its read: either way it is left out.
            entries = {CURRENT_ENTRY: (path / CURRENT_ENTRY).read_text()}
            for entry in path.iterdir():
                if entry.name in entries or entry.name.startswith(".") or not entry.is_file():
                    continue
                try:
                    entries[entry.name] = entry.read_text()
                except FileNotFoundError:
                    continue
        except OSError as exc:
            raise SigningKeyError(f"cannot read the signing keys in {where}: {exc}") from exc
        return cls.from_entries(entries, source=where)

    def _mac(self, key: bytes, kind: SignedKind, subject: str, body: bytes) -> str:
        message = b"\0".join((_DOMAIN, kind.encode(), subject.encode(), body))
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    def sign(self, kind: SignedKind, subject: str, body: bytes) -> Signature:
        mac = self._mac(self._keys[self.current], kind, subject, body)
        return Signature(key_id=self.current, mac=mac)

    def check(
        self, signature: Signature, kind: SignedKind, subject: str, body: bytes, *, key: str
    ) -> None:
        """Raise :class:`IntegrityError` unless ``signature`` is this keyring's MAC of
        ``body`` as ``kind`` of ``subject``."""
        secret = self._keys.get(signature.key_id)
        if secret is None:
            raise IntegrityError(
                f"{key} of {subject} is signed with key {signature.key_id}, which is not among "
                f"the trusted keys of {self.source} ({', '.join(self.key_ids)}). It was forged, "
                "or signed with a key since retired. Nothing of it was unpickled or run.",
                job_id=subject,
                key=key,
                unknown_key_id=signature.key_id,
            )
        expected = self._mac(secret, kind, subject, body)
        if not hmac.compare_digest(expected, signature.mac):
            raise IntegrityError(
                f"{key} of {subject} does not match its signature: it was changed after it was "
                f"written, or copied from another job. Nothing of it was unpickled or run. "
                f"Anyone who can write {key.split('/', 1)[0]}/ in this store can do this; see "
                "the security guide.",
                job_id=subject,
                key=key,
            )


_json = msgspec.json.Encoder()
_msgpack = msgspec.msgpack.Encoder()
_sealed_json = msgspec.json.Decoder(_SealedJson)
_sealed_blob = msgspec.msgpack.Decoder(_SealedBlob)


def _unsigned(key: str, subject: str) -> IntegrityError:
    return IntegrityError(
        f"{key} of {subject} is not signed: it was written by a Kinetic from before signed "
        "artifacts, or by someone else. Kinetic does not unpickle or run "
        "unsigned objects. Read that job with the Kinetic that wrote it, or run it again.",
        job_id=subject,
        key=key,
    )


def _not_sealed(
    data: bytes, decode: Callable[[bytes], object], key: str, subject: str
) -> Exception:
    """Why ``data``, which is not a signed envelope, was refused. A record written without a
    signature is still a JSON object or msgpack map ("is not signed"); anything else (random
    bytes, a bare value, trailing garbage, a mangled signature) is corrupt, and says so."""
    try:
        whole = decode(data)
    except Exception as exc:  # DecodeError, or UnicodeDecodeError for a mangled string
        why = str(exc)
    else:
        if isinstance(whole, dict) and "kinetic_signature" not in whole:
            return _unsigned(key, subject)
        why = (
            "a malformed signature" if isinstance(whole, dict) else f"a bare {type(whole).__name__}"
        )
    return CorruptRecordError(
        f"{key} of {subject} is corrupt: it is not a signed Kinetic object ({why}). It was "
        "truncated or overwritten; nothing of it was unpickled or run."
    )


def seal_json(keyring: Keyring, kind: SignedKind, subject: str, record: msgspec.Struct) -> bytes:
    """``record`` as signed JSON; its bytes inside are exactly what the MAC covers."""
    body = _json.encode(record)
    signature = _json.encode(keyring.sign(kind, subject, body))
    return b'{"kinetic_signature":' + signature + b',"record":' + body + b"}"


def _parse_json(data: bytes, subject: str, key: str) -> _SealedJson:
    try:
        sealed = _sealed_json.decode(data)
    except msgspec.ValidationError:  # well-formed, but not a signed record
        raise _not_sealed(data, msgspec.json.decode, key, subject) from None
    except msgspec.DecodeError as exc:
        raise CorruptRecordError(f"{key} is not valid JSON ({exc}); it may be truncated.") from exc
    if sealed.kinetic_signature is None:
        raise _unsigned(key, subject)
    return sealed


def peek_json(data: bytes, record_type: type[_T], *, subject: str, key: str) -> _T:
    """The record inside signed JSON, NOT verified: only to find which keyring verifies it
    (a job record names its backend and namespace). Verify with :func:`open_json` before
    acting on it."""
    sealed = _parse_json(data, subject, key)
    return decode_json(bytes(sealed.record), record_type, what=key)


def open_json(
    keyring: Keyring,
    kind: SignedKind,
    subject: str,
    data: bytes,
    record_type: type[_T],
    *,
    key: str,
) -> _T:
    """The record inside signed JSON, once its signature is verified."""
    sealed = _parse_json(data, subject, key)
    body = bytes(sealed.record)
    assert sealed.kinetic_signature is not None
    keyring.check(sealed.kinetic_signature, kind, subject, body, key=key)
    return decode_json(body, record_type, what=key)


def seal_blob(keyring: Keyring, kind: SignedKind, subject: str, body: bytes) -> bytes:
    return _msgpack.encode(
        _SealedBlob(body=body, kinetic_signature=keyring.sign(kind, subject, body))
    )


def open_blob(keyring: Keyring, kind: SignedKind, subject: str, data: bytes, *, key: str) -> bytes:
    """The body of a signed blob, once its signature is verified."""
    try:
        sealed = _sealed_blob.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        raise _not_sealed(data, msgspec.msgpack.decode, key, subject) from None
    if sealed.kinetic_signature is None:
        raise _unsigned(key, subject)
    keyring.check(sealed.kinetic_signature, kind, subject, sealed.body, key=key)
    return sealed.body
