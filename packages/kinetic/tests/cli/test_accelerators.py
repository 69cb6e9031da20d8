"""``kinetic accelerators``: the catalogue."""

import json

from kinetic.usage import price_table
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


def test_each_row_shows_the_list_price_of_the_whole_accelerator_and_when_it_was_read(
    invoke,
) -> None:
    result = invoke("accelerators", "--category", "gpu")
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    one, two = (float(rows[name][-2]) for name in ("gpu-l4", "gpu-l4-x2"))
    assert two == 2 * one > 0, "the price of every GPU of the shape"
    assert float(rows["gpu-l4"][-1]) < one, "spot is the cheaper column"
    assert rows["gpu-h200-x8"][-1] == "nvidia-h200-141gb", "no list price: the cells stay empty"
    table = price_table()
    assert f"as of {table.as_of}" in result.stderr, "the day the prices were read"
    assert "KINETIC_PRICES" in result.stderr, "what to do once they are stale"
    entry = next(
        e for e in json.loads(invoke("accelerators", "--json").stdout) if e["name"] == "tpu-v5e-8"
    )
    assert entry["list_price"]["usd_per_hour"]["on-demand"] == 8 * table.tpu["v5e"].on_demand
    assert entry["list_price"]["as_of"] == str(table.as_of)


def test_a_price_table_of_ones_own_replaces_the_built_in_one(invoke, tmp_path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "as_of": "2026-11-01",
                "stale_by": "2099-01-01",
                "region": "europe-west4",
                "gpu": {"l4": {"on_demand": 1.5, "spot": 0.5}},
            }
        )
    )
    result = invoke("accelerators", "--category", "gpu", env={"KINETIC_PRICES": str(prices)})
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows["gpu-l4-x2"][-2:] == ["3.00", "1.00"]
    assert rows["gpu-t4"][-1] == "nvidia-tesla-t4", "a type the table leaves out has no price"
    assert "europe-west4 as of 2026-11-01" in result.stderr
    assert "good until 2099-01-01" in result.stderr


def test_a_price_table_that_is_not_one_is_refused_naming_the_file_and_the_fault(
    invoke, tmp_path
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "as_of": "2026-11-01",
                "stale_by": "2027-01-01",
                "region": "x",
                "gpu": {"l4": {"on_demand": -1}},
            }
        )
    )
    result = invoke("accelerators", env={"KINETIC_PRICES": str(prices)})
    assert result.exit_code != 0
    assert str(prices) in result.stderr, result.stderr
    assert "Expected `float` >= 0.0 - at `$.gpu[...].on_demand`" in result.stderr
    missing = invoke("accelerators", env={"KINETIC_PRICES": str(tmp_path / "none.json")})
    assert missing.exit_code != 0 and "cannot be read" in missing.stderr
