"""Build the real control plane's binaries from Go modules, once per set of pins.

etcd, kube-apiserver, kube-controller-manager and the LeaderWorkerSet, Kueue and JobSet
controllers are compiled with the local Go toolchain through the Go module proxy only: no
prebuilt downloads, no container images. Kueue and JobSet each have a directory of their own
(``kueue-<key>``, ``jobset-<key>``), so adding or bumping one builds only that one. A build
goes to `<directory>.partial` and is renamed into place when every binary is there, so an
interrupted build is never mistaken for a finished one. A file lock keeps two concurrent test
sessions from building at once.

    python -m kinetic_testing.controlplane build     # what CI and the test plugin run
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kinetic_testing.cached_build import Progress, build_lock

from .jobset_build import build_jobset, jobset_ready
from .kueue_build import build_kueue, kueue_ready
from .versions import (
    JOB_POD_FAILURE_BACKOFF_S,
    PINS,
    Pins,
    bin_dir,
    cache_root,
    jobset_dir,
    kueue_dir,
)

__all__ = [
    "BINARIES",
    "BuildError",
    "Built",
    "built",
    "ensure_built",
    "go_environment",
    "go_toolchain",
]

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "lws-controller")
LWS_CRD = "lws-crd.yaml"
_MIN_GO = (1, 26)
_LOG_TAIL_LINES = 30


_KCM_MAIN = string.Template(
    """// kube-controller-manager as upstream builds it (cmd/kube-controller-manager), with
// the Job controller's first pod-failure backoff at ${backoff}s instead of 10s (a variable
// upstream exports for its own tests): a test's Job runs a failed or preempted pod again
// within about a second, not ten.
package main

import (
	"os"
	"time"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/controller/job"
)

func main() {
	job.DefaultJobPodFailureBackOff = ${backoff} * time.Second
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
"""
)


class BuildError(RuntimeError):
    """The control plane could not be built; the message says why and what to do."""


@dataclass(frozen=True)
class Built:
    """Where a finished build's binaries and CRD manifest are."""

    directory: Path
    pins: Pins

    def binary(self, name: str) -> Path:
        return self.directory / name

    @property
    def lws_crd(self) -> Path:
        return self.directory / LWS_CRD

    @property
    def kueue(self) -> Path:
        """The directory of the Kueue controller, its CRDs and webhook manifest."""
        return kueue_dir(self.pins)

    @property
    def jobset(self) -> Path:
        """The directory of the JobSet controller, its CRD and webhook manifest."""
        return jobset_dir(self.pins)


def _plane_ready(directory: Path) -> bool:
    marker = directory / "VERSIONS"
    return marker.is_file() and all((directory / name).is_file() for name in BINARIES)


def built(pins: Pins = PINS) -> Built | None:
    """The finished build for `pins`, or None if it has not been built yet."""
    if (
        _plane_ready(bin_dir(pins))
        and kueue_ready(kueue_dir(pins))
        and jobset_ready(jobset_dir(pins))
    ):
        return Built(bin_dir(pins), pins)
    return None


def go_environment(root: Path) -> dict[str, str]:
    """The environment of every `go` command run for the tests: module and build caches under
    `root`, reproducible static builds, this toolchain only."""
    return {
        **os.environ,
        "GOMODCACHE": str(root / "go" / "mod"),
        "GOCACHE": str(root / "go" / "build"),
        "GOPATH": str(root / "go" / "path"),
        "GOFLAGS": "-trimpath -buildvcs=false -modcacherw",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }


def go_toolchain() -> str:
    """The `go` on PATH, checked to be new enough; BuildError naming what to install if not."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "No Go toolchain on PATH: the real Kubernetes control plane is built from Go modules. "
            f"Install Go {_MIN_GO[0]}.{_MIN_GO[1]} or newer (https://go.dev/doc/install) "
            "and run the tests again."
        )
    output = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    match = re.match(r"go(\d+)\.(\d+)", output.stdout.strip())
    if match is None or (int(match[1]), int(match[2])) < _MIN_GO:
        found = output.stdout.strip() or output.stderr.strip()
        raise BuildError(
            f"Go {_MIN_GO[0]}.{_MIN_GO[1]} or newer is needed to build Kubernetes "
            f"{PINS.kubernetes}; found {found!r} at {go}. Install a newer Go toolchain."
        )
    return go


def ensure_built(pins: Pins = PINS, *, out: TextIO | None = None) -> Built:
    """Return the build for `pins`, building it first if needed (about 5-6 min cold on 2 cores).

    Progress goes to `out` (stderr by default): one line per step, and a line every 20 s
    while a step runs.
    """
    done = built(pins)
    if done is not None:
        return done
    go = go_toolchain()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with build_lock(root):
        done = built(pins)  # another session may have finished it while we waited
        if done is not None:
            return done
        return _Builder(go, root, pins, Progress("k8s control plane", out or sys.stderr)).run()


class _Builder:
    def __init__(self, go: str, root: Path, pins: Pins, progress: Progress) -> None:
        self.go = go
        self.root = root
        self.pins = pins
        self.progress = progress
        self.final = bin_dir(pins)
        self.staging = self.final.with_name(self.final.name + ".partial")
        self.logs = root / "logs"
        self.env = go_environment(root)

    def run(self) -> Built:
        started = time.monotonic()
        if not _plane_ready(self.final):
            self._build_plane()
        if not kueue_ready(kueue_dir(self.pins)):
            self._build_kueue()
        if not jobset_ready(jobset_dir(self.pins)):
            self._build_jobset()
        if os.environ.get("KINETIC_K8S_KEEP_GO_CACHES", "1") == "0":
            shutil.rmtree(self.root / "go", ignore_errors=True)
            shutil.rmtree(self.root / "src", ignore_errors=True)
        self.progress.say(f"built in {time.monotonic() - started:.0f}s")
        return Built(self.final, self.pins)

    def _build_kueue(self) -> None:
        self._build_apart(
            kueue_dir(self.pins),
            f"Building the Kueue {self.pins.kueue} controller (once; about 4-5 min on 2 cores)",
            lambda staging: build_kueue(
                self._go,
                self._module_dir(f"kueue-{self.pins.kueue}"),
                Path(self.env["GOMODCACHE"]),
                staging,
                self.pins,
            ),
        )

    def _build_jobset(self) -> None:
        self._build_apart(
            jobset_dir(self.pins),
            f"Building the JobSet {self.pins.jobset} controller (once; about 2-4 min on 2 cores)",
            lambda staging: build_jobset(
                self._go,
                self._module_dir(f"jobset-{self.pins.jobset}"),
                Path(self.env["GOMODCACHE"]),
                staging,
                self.pins,
            ),
        )

    def _build_apart(self, final: Path, step: str, build: Callable[[Path], None]) -> None:
        """Build a controller that has a directory of its own: into a staging directory,
        renamed into place once complete."""
        staging = final.with_name(final.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        self.logs.mkdir(exist_ok=True)
        with self.progress.step(step):
            build(staging)
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)

    def _build_plane(self) -> None:
        self.progress.say(
            f"building {self.pins.describe()} into {self.final} (once; about 5-6 min on 2 cores)"
        )
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging.mkdir(parents=True)
        self.logs.mkdir(exist_ok=True)
        with self.progress.step("Building kube-apiserver and kube-controller-manager"):
            self._build_kubernetes()
        with self.progress.step("Building etcd"):
            self._build_etcd()
        with self.progress.step("Building the LeaderWorkerSet controller"):
            self._build_lws()
        (self.staging / "VERSIONS").write_text(self.pins.describe() + "\n")
        shutil.rmtree(self.final, ignore_errors=True)
        self.staging.rename(self.final)

    def _module_dir(self, name: str) -> Path:
        directory = self.root / "src" / name
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def _go(self, args: list[str], cwd: Path, step: str) -> str:
        log = self.logs / f"{step}.log"
        with log.open("a") as sink:
            sink.write(f"$ go {' '.join(args)}\n")
            sink.flush()
            result = subprocess.run(
                [self.go, *args],
                cwd=cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
                check=False,
            )
            sink.write(result.stdout)
        if result.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-_LOG_TAIL_LINES:])
            raise BuildError(
                f"`go {' '.join(args[:2])}` failed while building the control plane ({step}); "
                f"the module proxy must be reachable. Full log: {log}\n{tail}"
            )
        return result.stdout

    def _build_kubernetes(self) -> None:
        # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
        # paths that are not in its module zip; a wrapper module replaces each with its tag.
        pins = self.pins
        directory = self._module_dir(f"kube-{pins.kubernetes}")
        info = json.loads(
            self._go(
                ["mod", "download", "-json", f"k8s.io/kubernetes@{pins.kubernetes}"],
                directory,
                "kubernetes",
            )
        )
        upstream = Path(info["GoMod"]).read_text()
        go_line = re.search(r"^go (\S+)$", upstream, re.MULTILINE)
        staging = sorted(set(re.findall(r"^\s*(k8s\.io/\S+) v0\.0\.0\s*$", upstream, re.MULTILINE)))
        replaces = "\n".join(f"\t{module} => {module} {pins.staging}" for module in staging)
        (directory / "go.mod").write_text(
            "module kinetic.test/kube\n\n"
            f"go {go_line[1] if go_line else '1.26.0'}\n\n"
            f"require k8s.io/kubernetes {pins.kubernetes}\n\n"
            "tool (\n\tk8s.io/kubernetes/cmd/kube-apiserver\n"
            "\tk8s.io/kubernetes/cmd/kube-controller-manager\n)\n\n"
            f"replace (\n{replaces}\n)\n"
        )
        stamp = ["-s", "-w"]
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            stamp += [
                f"-X {package}.gitVersion={pins.kubernetes}",
                f"-X {package}.gitMajor=1",
                f"-X {package}.gitMinor={pins.minor}",
                f"-X {package}.gitTreeState=clean",
            ]
        (directory / "kcm").mkdir(exist_ok=True)
        kcm_main = _KCM_MAIN.substitute(backoff=JOB_POD_FAILURE_BACKOFF_S)
        (directory / "kcm" / "main.go").write_text(kcm_main)
        self._go(["mod", "tidy"], directory, "kubernetes")
        ldflags = f"-ldflags={' '.join(stamp)}"
        self._go(
            ["build", ldflags, "-o", f"{self.staging}/", "k8s.io/kubernetes/cmd/kube-apiserver"],
            directory,
            "kubernetes",
        )
        self._go(
            ["build", ldflags, "-o", f"{self.staging}/kube-controller-manager", "./kcm"],
            directory,
            "kubernetes",
        )

    def _build_etcd(self) -> None:
        directory = self._module_dir(f"etcd-{self.pins.etcd}")
        (directory / "go.mod").write_text(
            "module kinetic.test/etcd\n\ngo 1.25.0\n\n"
            f"require go.etcd.io/etcd/server/v3 {self.pins.etcd}\n"
        )
        (directory / "main.go").write_text(_ETCD_MAIN)
        self._go(["mod", "tidy"], directory, "etcd")
        self._go(
            ["build", "-ldflags=-s -w", "-o", str(self.staging / "etcd"), "."], directory, "etcd"
        )

    def _build_lws(self) -> None:
        pins = self.pins
        directory = self._module_dir(f"lws-{pins.lws}")
        (directory / "go.mod").write_text(
            f"module kinetic.test/lws\n\ngo 1.25.0\n\nrequire sigs.k8s.io/lws {pins.lws}\n\n"
            "tool sigs.k8s.io/lws/cmd\n"
        )
        self._go(["mod", "tidy"], directory, "lws")
        self._go(
            [
                "build",
                f"-ldflags=-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion={pins.lws}",
                "-o",
                str(self.staging / "lws-controller"),
                "sigs.k8s.io/lws/cmd",
            ],
            directory,
            "lws",
        )
        crd = (
            Path(self.env["GOMODCACHE"])
            / f"sigs.k8s.io/lws@{pins.lws}"
            / "config"
            / "crd"
            / "bases"
            / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
        )
        shutil.copyfile(crd, self.staging / LWS_CRD)


_ETCD_MAIN = """\
// etcd's real entry point, built as a module so no prebuilt binary is needed.
package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""


def main(argv: list[str] | None = None, *, exit: Callable[[int], None] = sys.exit) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["build"], ["where"]):
        sys.stderr.write("usage: python -m kinetic_testing.controlplane [build|where]\n")
        exit(2)
        return
    if args == ["where"]:
        print(bin_dir())
        return
    try:
        result = ensure_built()
    except BuildError as error:
        sys.stderr.write(f"error: {error}\n")
        exit(1)
        return
    print(result.directory)
