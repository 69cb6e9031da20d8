"""``accelerator=`` as a list and ``capacity=``: every value that cannot run is refused at
decoration, naming the value and the rule; what can run reaches the job's record in order; a
backend that cannot choose refuses a choice before anything is uploaded; and ``local`` runs the
first entry (issue 52)."""

import sys
from pathlib import Path

import msgspec
import pytest

import kinetic
from kinetic.submission.target import _check_capacity_choices
from kinetic_protocol import Capabilities, ConfigError, JobRecord
from kinetic_protocol.capacity import Choice, job_choices, record_capacity, record_choices

sys.path.insert(0, str(Path(__file__).resolve().parent))

import multihost_userfuncs as uf


def _noop() -> None:
    """A function to decorate."""


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"accelerator": ["gpu-h100-x8", "tpu-v5e-8"]},
            ConfigError,
            r"mixes families: 'gpu-h100-x8' is a GPU, 'tpu-v5e-8' a TPU",
        ),
        (
            {"accelerator": ["tpu-v5e-16", "tpu-v6e-8"]},
            ConfigError,
            r"'tpu-v5e-16' spans 4 hosts, 'tpu-v6e-8' 1.*same hosts and chips per host",
        ),
        (
            {"accelerator": ["tpu-v5e-8", "tpu-v4-8"]},
            ConfigError,
            r"'tpu-v5e-8' has 8 chips per host, 'tpu-v4-8' 4",
        ),
        (
            {"accelerator": ["gpu-h100-x8", "gpu-a100-x4"]},
            ConfigError,
            r"'gpu-h100-x8' has 8 GPU\(s\), 'gpu-a100-x4' 4",
        ),
        ({"accelerator": ["cpu", "gpu-l4"]}, ConfigError, r"'cpu' runs on any machine"),
        ({"accelerator": ["gpu-l4", "gpu-l4"]}, ConfigError, r"names gpu-l4 twice"),
        ({"accelerator": []}, ConfigError, r"accelerator=\[\] names nothing"),
        ({"accelerator": ["gpu-l4", 4]}, TypeError, r"accelerator must be a name or a list"),
        ({"accelerator": ["gpu-l4", "gpu-x9"]}, ConfigError, r"gpu-x9"),
        ({"capacity": "cheap"}, ConfigError, r"capacity='cheap' is not a kind of capacity"),
        (
            {"capacity": ["spot", "preemptible"]},
            ConfigError,
            r"capacity='preemptible' is not a kind.*'on-demand', 'spot', 'flex-start' or",
        ),
        (
            {"capacity": "reservation:My_Res"},
            ConfigError,
            r"capacity='reservation:My_Res': a reservation's name is lower-case",
        ),
        ({"capacity": "reservation:"}, ConfigError, r"a reservation's name"),
        ({"capacity": ["spot", "spot"]}, ConfigError, r"names spot twice"),
        ({"capacity": 3}, TypeError, r"capacity must be .* got int 3"),
        (
            {"spot": True, "capacity": ["spot", "on-demand"]},
            ConfigError,
            r"spot=True means capacity='spot', and capacity=\['spot', 'on-demand'\] says",
        ),
        ({"spot": True, "capacity": "on-demand"}, ConfigError, r"spot=True means"),
        ({"spot": "yes"}, TypeError, r"spot must be True or False"),
        (
            {"capacity": "flex-start", "max_run_duration": 7 * 24 * 3600 + 1},
            ConfigError,
            r"max_run_duration=604801 seconds: .* at most 7 days \(604800 seconds\)",
        ),
        ({"capacity": "flex-start", "max_run_duration": 0}, ConfigError, r"more than 0 seconds"),
        ({"capacity": "flex-start", "max_run_duration": -5}, ConfigError, r"=-5 seconds"),
        ({"capacity": "flex-start", "max_run_duration": "1h"}, TypeError, r"number of seconds"),
        (
            {"capacity": ["spot", "on-demand"], "max_run_duration": 3600},
            ConfigError,
            r"max_run_duration=3600 bounds a flex-start run.*no flex-start.*timeout=",
        ),
    ],
)
def test_a_choice_that_cannot_run_is_refused_at_decoration(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    options = {"accelerator": "gpu-l4", "backend": "local", **options}
    with pytest.raises(error, match=message):
        kinetic.run(**options)(_noop)  # type: ignore[arg-type]


def test_choices_keep_their_order_capacity_first() -> None:
    remote = kinetic.run(
        accelerator=["gpu-h100-x8", "gpu-a100-80gb-x8"], capacity=["spot", "on-demand"]
    )(_noop)
    options = remote.options
    assert [a.name for a in options.accelerators] == ["gpu-h100-x8", "gpu-a100-80gb-x8"]
    assert options.capacity == ("spot", "on-demand")
    assert job_choices(("a", "b"), ("spot", "on-demand")) == (
        Choice("a", "spot"),
        Choice("b", "spot"),
        Choice("a", "on-demand"),
        Choice("b", "on-demand"),
    )
    same_hosts = kinetic.run(accelerator=["tpu-v6e-16", "tpu-v5e-16"])(_noop).options
    assert same_hosts.accelerator.name == "tpu-v6e-16"
    assert kinetic.run(accelerator="gpu-l4", spot=True)(_noop).options.capacity == ("spot",)
    assert kinetic.run(accelerator="gpu-l4", spot=True, capacity="spot")(_noop).options.capacity


def test_max_run_duration_reaches_the_record_in_whole_seconds() -> None:
    options = kinetic.run(
        accelerator="gpu-l4", capacity=["flex-start", "on-demand"], max_run_duration=90.5
    )(_noop).options
    assert options.max_run_duration == 91
    assert kinetic.run(accelerator="gpu-l4")(_noop).options.max_run_duration == 0


def _record(**fields: object) -> JobRecord:
    base = {
        "job_id": "j", "backend": "gke", "project": "p", "cluster_name": "c", "zone": "z",
        "namespace": "n", "bucket_name": "b", "k8s_name": "j", "image_uri": "",
        "accelerator": "gpu-l4", "func_name": "f", "display_name": "f on gpu-l4",
        "created_at": "2026-01-01T00:00:00+00:00",
    }  # fmt: skip
    return msgspec.json.decode(msgspec.json.encode(base | fields), type=JobRecord)


def test_a_record_without_capacity_reads_as_spot_or_on_demand_and_a_new_one_keeps_its_list() -> (
    None
):
    assert record_capacity(_record()) == ("on-demand",)
    assert record_capacity(_record(spot=True)) == ("spot",)
    listed = _record(fallback_accelerators=["gpu-t4"], capacity=["reservation:r1", "on-demand"])
    assert record_choices(listed) == (
        Choice("gpu-l4", "reservation:r1"),
        Choice("gpu-t4", "reservation:r1"),
        Choice("gpu-l4", "on-demand"),
        Choice("gpu-t4", "on-demand"),
    )


def test_a_backend_that_cannot_choose_refuses_a_choice_naming_those_that_can() -> None:
    listed = kinetic.run(accelerator=["gpu-l4", "gpu-t4"])(_noop).options
    with pytest.raises(
        ConfigError, match=r"'example' backend .* accelerator=\['gpu-l4', 'gpu-t4'\]"
    ):
        _check_capacity_choices("example", Capabilities(), listed)
    reserved = kinetic.run(accelerator="gpu-l4", capacity="reservation:r1")(_noop).options
    with pytest.raises(ConfigError, match=r"capacity='reservation:r1'\. Backends that can: .*gke"):
        _check_capacity_choices("example", Capabilities(), reserved)
    _check_capacity_choices("local", Capabilities(capacity_choices=True), listed)
    for plain in ({"spot": True}, {"capacity": "on-demand"}):
        options = kinetic.run(accelerator="gpu-l4", **plain)(_noop).options  # type: ignore[arg-type]
        _check_capacity_choices("example", Capabilities(), options)


@pytest.mark.usefixtures("clean_kinetic_env")
def test_the_local_backend_runs_the_first_entry() -> None:
    remote = kinetic.run(
        accelerator=["gpu-l4", "gpu-t4"], capacity=["spot", "on-demand"], backend="local"
    )(uf.say_lines)
    job = remote.run_async(1)
    assert job.result(timeout=60) == 0, "one host (host 0) of the first accelerator"
    assert job.accelerator == "gpu-l4"
    assert (job.record.fallback_accelerators, job.record.capacity) == (
        ["gpu-t4"],
        ["spot", "on-demand"],
    )
    assert not job.record.spot
