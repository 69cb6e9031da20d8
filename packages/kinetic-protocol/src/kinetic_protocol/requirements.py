"""Find the user's dependencies and reduce them to the lines an installer needs.

The source, in order of preference: ``requirements.txt`` in the project root, else
``[project].dependencies`` of the nearest ``pyproject.toml`` (the project root or one of its
parents). Comments, blank lines and line continuations are resolved here and ``-r`` includes are
inlined, so the result depends only on what would be installed, never on formatting. The same
list feeds the bundled image's build context, the prebuilt pod-start install and the local
isolated environment.

Accelerator jobs get the matching JAX build (:data:`JAX_BUILDS`): a TPU or GPU is useless to
JAX's CPU-only default wheels. A ``jax`` requirement of the user's is given the build's extra
with its version, markers and URL kept (``jax>=0.4.30`` becomes ``jax[tpu]>=0.4.30``), and
without one the build is added. An explicit build extra (``jax[cpu]``) is the user's choice and
stays as written.
"""

import re
import tomllib
from pathlib import Path

import msgspec

from kinetic_protocol.errors import ConfigError

__all__ = [
    "JAX_BUILDS",
    "Requirements",
    "discover_requirements",
    "jax_build_notice",
    "jax_requirement",
    "prebuilt_requirements",
    "requirement_extras",
    "requirement_name",
    "with_jax_build",
]

JAX_BUILDS: dict[str, str] = {"tpu": "jax[tpu]", "gpu": "jax[cuda12]"}
"""The JAX build an image of each accelerator category installs; CPU images add none."""
_BUILD_EXTRA_RE = re.compile(r"^(cpu|tpu|cuda.*|rocm.*)$")
"""Extras of ``jax`` that choose a build: a user who names one has made the choice."""
_EXTRAS_RE = re.compile(r"^\s*\[(?P<extras>[^\]]*)\]")
_NAME_RE = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:[\[;@<>=!~(]|$)")

_INCLUDE_RE = re.compile(r"^(?:-r|--requirement)(?:\s+|=)(?P<path>\S+)$")
_LOCAL_RE = re.compile(r"^(?:-e|--editable)(?:\s+|=)|^(?:\.{1,2}|~)?/|^\.{1,2}$|^file:")
_INLINE_COMMENT_RE = re.compile(r"(^|\s+)#.*$")
_MAX_INCLUDE_DEPTH = 10


class Requirements(msgspec.Struct, frozen=True, kw_only=True):
    """The user's requirement lines and where they came from (for messages)."""

    lines: tuple[str, ...]
    """Requirement specifiers and pip options (``--index-url ...``), one per entry, in order."""
    source: str
    """``requirements.txt``, ``pyproject.toml`` (both as paths) or ``""`` when none was found."""

    def file_text(self) -> str:
        """The lines as a requirements file, exactly as it is placed in images and venvs."""
        return "".join(f"{line}\n" for line in self.lines)


def discover_requirements(project_root: Path) -> Requirements:
    """The project's requirements; an empty list when it declares none."""
    root = Path(project_root)
    req_file = root / "requirements.txt"
    if req_file.is_file():
        lines = _read_requirements_file(req_file, depth=0)
        return Requirements(lines=tuple(_check_remote(lines, req_file)), source=str(req_file))
    pyproject = _nearest_pyproject(root)
    if pyproject is None:
        return Requirements(lines=(), source="")
    deps = _pyproject_dependencies(pyproject)
    return Requirements(lines=tuple(_check_remote(deps, pyproject)), source=str(pyproject))


def prebuilt_requirements(project_root: Path) -> list[str]:
    """Requirement lines for a prebuilt image, to store in ``CallDescriptor.requirements``.

    Contract with the runtime: before it loads the call, the runtime writes these lines, one
    per line, to a requirements file and runs ``uv pip install --python <its own interpreter>
    -r <that file>`` (so pip options such as ``--index-url`` keep working). A failed install is
    a failure of the ``install`` phase, reported with the tail of uv's output. An empty list
    means nothing to install. The lines never name local paths: the user's own code arrives in
    the code bundle, not through the installer.
    """
    return list(discover_requirements(project_root).lines)


def requirement_name(line: str) -> str | None:
    """The normalised project name (PEP 503) a requirement line installs; None for options
    (``--index-url ...``) and bare URLs, which name no project."""
    match = _NAME_RE.match(line.strip())
    return re.sub(r"[-_.]+", "-", match["name"]).lower() if match else None


def requirement_extras(line: str) -> tuple[str, ...]:
    """The extras a requirement line asks of its project, lowercased (``jax[TPU, cpu]>=1``
    gives ``("tpu", "cpu")``); empty for none, options and bare URLs."""
    match = _NAME_RE.match(line.strip())
    if match is None:
        return ()
    extras = _EXTRAS_RE.match(line.strip()[len(match["name"]) :])
    if extras is None:
        return ()
    return tuple(item.strip().lower() for item in extras["extras"].split(",") if item.strip())


def jax_requirement(lines: tuple[str, ...] | list[str], category: str) -> str | None:
    """The JAX build to add for a ``category`` job, or None when a line names ``jax`` (which
    :func:`with_jax_build` gives the build instead).

    Only the project ``jax`` counts: packages that merely depend on it, such as ``flax``,
    ``jax-ai-stack`` or ``jaxlib`` alone, would pull the CPU build.
    """
    build = JAX_BUILDS.get(category)
    if build is None or any(requirement_name(line) == "jax" for line in lines):
        return None
    return build


def with_jax_build(lines: tuple[str, ...] | list[str], category: str) -> tuple[str, ...]:
    """``lines`` with each ``jax`` requirement given the ``category``'s build extra.

    Everything else on the line is kept: the user's spelling, other extras, version
    specifiers, environment markers and a direct URL (``jax[tpu] @ https://...``). A line
    whose extras already choose a build (``jax[cpu]``, ``jax[cuda12]``) is left as written.
    The build to add when no line names ``jax`` is :func:`jax_requirement`'s.
    """
    build = JAX_BUILDS.get(category)
    if build is None:
        return tuple(lines)
    extra = build[build.index("[") + 1 : -1]
    return tuple(_give_extra(line, extra) for line in lines)


def jax_build_notice(lines: tuple[str, ...] | list[str], category: str) -> str | None:
    """What :func:`with_jax_build` changed, said in one line for the user; None if nothing."""
    rewritten = [
        (old, new)
        for old, new in zip(lines, with_jax_build(lines, category), strict=True)
        if old != new
    ]
    if not rewritten:
        return None
    changes = ", ".join(f"{old!r} as {new!r}" for old, new in rewritten)
    return (
        f"A {category} job needs JAX's {category} build, so Kinetic installs {changes}. "
        "To install a build of your choice, name its extra yourself (e.g. 'jax[cpu]')."
    )


def _give_extra(line: str, extra: str) -> str:
    match = _NAME_RE.match(line)
    if match is None or requirement_name(line) != "jax":
        return line
    name = match["name"]
    rest = line[len(name) :]
    extras = _EXTRAS_RE.match(rest)
    if extras is None:
        return f"{name}[{extra}]{rest}"
    chosen = [item.strip() for item in extras["extras"].split(",") if item.strip()]
    if any(_BUILD_EXTRA_RE.match(item.lower()) for item in chosen):
        return line
    return f"{name}[{','.join([*chosen, extra])}]{rest[extras.end() :]}"


def _logical_lines(text: str) -> list[str]:
    """Lines with continuations joined, comments removed and whitespace trimmed."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        line = _INLINE_COMMENT_RE.sub("", line).strip()
        if line:
            out.append(" ".join(line.split()))
    if pending.strip():
        out.append(" ".join(_INLINE_COMMENT_RE.sub("", pending).split()))
    return out


def _read_requirements_file(path: Path, *, depth: int) -> list[str]:
    if depth > _MAX_INCLUDE_DEPTH:
        raise ConfigError(
            f"Requirements includes nest deeper than {_MAX_INCLUDE_DEPTH} levels at {path}. "
            "Check for a file that includes itself with -r."
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read requirements file {path}: {exc}.") from exc
    lines: list[str] = []
    for line in _logical_lines(text):
        include = _INCLUDE_RE.match(line)
        if include:
            lines += _read_requirements_file(path.parent / include["path"], depth=depth + 1)
        else:
            lines.append(line)
    return lines


def _nearest_pyproject(start: Path) -> Path | None:
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _pyproject_dependencies(path: Path) -> list[str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read dependencies from {path}: {exc}. Fix the file.") from exc
    project = data.get("project", {})
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ConfigError(
            f"[project].dependencies in {path} must be a list of strings, got {deps!r}."
        )
    return [" ".join(d.split()) for d in deps if d.strip()]


def _check_remote(lines: list[str], source: Path) -> list[str]:
    """Reject lines that install from the local disk: the image cannot see this machine."""
    for line in lines:
        if _LOCAL_RE.search(line) or " @ file:" in line:
            raise ConfigError(
                f"Requirement {line!r} in {source} installs from a local path, which a remote "
                "image cannot reach. Remove it: your project's code travels in the code bundle "
                "and is importable on the remote side. List the packages it depends on instead."
            )
    return lines
