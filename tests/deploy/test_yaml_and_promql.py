"""The two small readers the deployment tests rely on: the YAML subset loader and the PromQL name scanner."""

from __future__ import annotations

import pytest

from tests.deploy import yaml_files
from tests.deploy.promql import exported_series, label_names, metric_names
from tests.deploy.yaml_subset import YamlSubsetError, load


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('up{job="reassignd"} == 0', {"up"}),
        ('sum by (state) (reassignd_partitions{cluster=~"$cluster"})', {"reassignd_partitions"}),
        ("rate(reassignd_cycles_total[5m]) > 0.5 * 2e3", {"reassignd_cycles_total"}),
        (
            'histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="by (y)"}[$__rate_interval])))',
            {"a_bucket"},
        ),
        ("time() - b offset 5m", {"b"}),
        ("a and on (cluster, instance) b unless ignoring(x) c", {"a", "b", "c"}),
        ("x / on (i) group_left (plan) y", {"x", "y"}),
        ("max(reassignd_x{a='it''s'}) or vector(0)", {"reassignd_x"}),
        ('foo:bar_rate5m{code!~"5.."}', {"foo:bar_rate5m"}),
        ("sum without (instance) (z) > bool 1", {"z"}),
    ],
)
def test_metric_names(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_a_selector_without_a_metric_name_is_refused() -> None:
    with pytest.raises(ValueError, match="without a metric name"):
        metric_names('sum({__name__=~"reassignd_.*"})')


def test_label_names() -> None:
    expr = 'sum by (le, instance) (rate(a_bucket{job="x", state=~"running|paused"}[5m])) and on (cluster) b'
    assert label_names(expr) == {"le", "instance", "job", "state", "cluster"}


def test_exported_series_include_declared_families_without_samples() -> None:
    scrape = "\n".join(
        [
            "# HELP a_total A.",
            "# TYPE a_total counter",
            "# TYPE h histogram",
            'h_bucket{le="1.0"} 0.0',
            "# TYPE g gauge",
            'g{broker="1",direction="incoming"} 3.0',
        ]
    )
    series = exported_series(scrape)
    assert set(series) == {"a_total", "h_bucket", "h_sum", "h_count", "g"}
    assert series["g"] == {"broker", "direction"} and series["h_bucket"] == {"le"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a: 1\nb: x\n", {"a": 1, "b": "x"}),
        ('a:\n  - 1\n  - \'two\'\n  - "th\\"ree"\n', {"a": [1, "two", 'th"ree']}),
        ("a:\n- x\n- y\nb: no\n", {"a": ["x", "y"], "b": False}),
        ('- k: v\n  m:\n    n: [1, "a, b", c]\n- null\n', [{"k": "v", "m": {"n": [1, "a, b", "c"]}}, None]),
        ("a: >-\n  one\n  two\n\n  three\nb: 2  # comment\n", {"a": "one two\nthree", "b": 2}),
        ("a: |\n  x: 1\n  # kept\nb: 1.5\n", {"a": "x: 1\n# kept\n", "b": 1.5}),
        ('v:\n  x:\n  y: "#not a comment"\n', {"v": {"x": None, "y": "#not a comment"}}),
        ("p: ./a:/b:ro\nq: '127.0.0.1:1:2'\n", {"p": "./a:/b:ro", "q": "127.0.0.1:1:2"}),
    ],
)
def test_yaml_subset(text: str, value: object) -> None:
    assert load(text) == value


@pytest.mark.parametrize(
    "text",
    ["a: &x 1\nb: *x\n", "a: {b: 1}\n", "a: !tag x\n", "a: 1\na: 2\n", "a:\n  b: 1\n c: 2\n", "---\na: 1\n"],
)
def test_yaml_subset_refuses_what_it_does_not_read(text: str) -> None:
    with pytest.raises(YamlSubsetError):
        load(text)


@pytest.mark.parametrize("relative", yaml_files.YAML_FILES)
def test_subset_loader_agrees_with_pyyaml(relative: str) -> None:
    reader = yaml_files.pyyaml_reader()
    if reader is None:
        pytest.skip("PyYAML is not installed here (neither in this interpreter nor as python3-yaml)")
    assert yaml_files.load(relative) == yaml_files.load_with_pyyaml(reader, relative)
