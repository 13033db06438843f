"""The generated documentation and example file are in sync with the schema and are valid."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from reassignd.config import load_config, schema
from reassignd.config.loader import read_toml
from reassignd.config.reference import render_markdown, render_toml
from reassignd.config.schema import env_var_for

ROOT = Path(__file__).resolve().parents[2]


def test_docs_configuration_md_is_in_sync() -> None:
    checked_in = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert checked_in == render_markdown(), "run: reassignd config-reference > docs/configuration.md"


def test_example_config_is_in_sync_and_valid() -> None:
    path = ROOT / "config" / "reassignd.toml"
    assert path.read_text(encoding="utf-8") == render_toml(), (
        "run: reassignd config-reference --format toml > config/reassignd.toml"
    )
    load_config(path)


def test_every_key_is_documented_in_both() -> None:
    markdown, example = render_markdown(), render_toml()
    for name, key in schema().items():
        assert key.doc.strip(), name
        shown = f"{name}.<property>" if key.prefix else name
        assert f"### `{shown}`" in markdown
        assert re.search(rf"^(# )?{re.escape(name)}[ .=]", example, re.MULTILINE), name
        if not key.prefix:
            assert key.env_var in markdown and key.env_var in example


def test_uncommented_example_lines_parse_and_name_real_keys(tmp_path: Path) -> None:
    lines = []
    for line in render_toml().splitlines():
        match = re.match(r"^# ([a-z][\w.\"-]* = .*)$", line)
        # A secret and its `.file` exclude each other (and TOML cannot hold both): keep the file form.
        if match and not schema().get(match.group(1).split(" ")[0], schema()["log.level"]).secret:
            lines.append(match.group(1))
    uncommented = tmp_path / "all.toml"
    uncommented.write_text("\n".join(lines) + "\n")
    flat = read_toml(uncommented)
    tomllib.loads(uncommented.read_text())
    table = schema()
    for name in flat:
        assert name in table or name.startswith("cluster.client."), name
    commented_or_set = set(flat) | {n for n, k in table.items() if k.required or k.secret}
    assert {n for n, k in table.items() if not k.prefix} <= commented_or_set


def test_env_vars_are_unique_and_derived() -> None:
    names = [k.env_var for k in schema().values() if not k.prefix]
    assert len(names) == len(set(names))
    assert env_var_for("reassignment.max.incoming.replica.movements.per.broker") == (
        "REASSIGND_REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER"
    )
    assert env_var_for("a-b.c") == "REASSIGND_A_B_C"


def test_no_key_is_a_prefix_of_another_except_secret_files() -> None:
    # TOML cannot hold both `a = 1` and `a.b = 2`; only a secret and its `.file` may (exclusive).
    names = list(schema())
    for name in names:
        for other in names:
            if other.startswith(name + "."):
                assert other == name + ".file" and schema()[name].secret, (name, other)
