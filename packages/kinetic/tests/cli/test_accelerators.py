"""``kinetic accelerators``: the catalogue."""

import json

from kinetic_protocol.accelerators import GPU_TYPES, TPU_GENERATIONS, valid_accelerator_names


def test_json_lists_every_valid_name_with_its_shape(invoke) -> None:
    result = invoke("accelerators", "--json")
    assert result.exit_code == 0
    catalogue = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert list(catalogue) == valid_accelerator_names()
    assert (catalogue["tpu-v5e-8"]["topology"], catalogue["tpu-v5e-8"]["hosts"]) == ("2x4", 1)
    assert catalogue["tpu-v5e-32"]["multi_host"] is True
    two_hosts = catalogue["tpu-v5e-8-multihost"]
    assert (two_hosts["hosts"], two_hosts["chips_per_host"]) == (2, 4)
    assert two_hosts["machine_type"] == "ct5lp-hightpu-4t"
    assert catalogue["tpu-v5e-8"]["machine_type"] == "ct5lp-hightpu-8t"
    assert catalogue["gpu-a100-x8"]["count"] == 8
    assert catalogue["cpu"]["category"] == "cpu"


def test_category_filters_the_list(invoke) -> None:
    gpus = json.loads(invoke("accelerators", "--category", "gpu", "--json").stdout)
    assert {entry["category"] for entry in gpus} == {"gpu"}
    assert {entry["type"] for entry in gpus} == set(GPU_TYPES)
    tpus = json.loads(invoke("accelerators", "--category", "tpu", "--json").stdout)
    assert {entry["type"] for entry in tpus} == set(TPU_GENERATIONS)


def test_plain_table_has_one_row_per_name_and_no_ansi(invoke) -> None:
    result = invoke("accelerators")
    lines = result.stdout.splitlines()
    assert lines[0].split()[:6] == [
        "NAME",
        "CATEGORY",
        "GPUS/CHIPS",
        "TOPOLOGY",
        "HOSTS",
        "CHIPS/HOST",
    ]
    assert "MACHINE TYPE" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == valid_accelerator_names()
    row = next(line.split() for line in lines if line.startswith("tpu-v5e-8-multihost "))
    assert row[1:7] == ["tpu", "8", "2x4", "2", "4", "ct5lp-hightpu-4t"]
    assert "\x1b[" not in result.stdout


def test_on_a_terminal_it_is_a_rich_table(invoke) -> None:
    result = invoke("accelerators", "--category", "cpu", env={"TTY_COMPATIBLE": "1"})
    assert "\x1b[" in result.stdout
    assert "┃" in result.stdout or "│" in result.stdout


def test_bad_category_is_a_usage_error(invoke) -> None:
    result = invoke("accelerators", "--category", "fpga")
    assert result.exit_code == 2


def test_subprocess_accelerators_json(run_cli) -> None:
    result = run_cli("accelerators", "--json", "--category", "tpu")
    assert result.returncode == 0, result.stderr
    names = [entry["name"] for entry in json.loads(result.stdout)]
    assert "tpu-v5p-8" in names
    assert all(name.startswith("tpu-") for name in names)
