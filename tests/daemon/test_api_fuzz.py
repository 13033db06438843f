"""schemathesis against the OpenAPI document the daemon serves: a real daemon driving `reassignd sim`.

Every operation gets a bounded number of schema-valid requests (plus schemathesis's boundary cases); each
answer must be no server error, a documented status, of the documented content type and schema, and a
schema-valid request must be accepted, except where the answer depends on the cluster's state rather than
on the request (listed in STATE_DEPENDENT with the reason). The run is deterministic (seeded) and bounded
(EXAMPLES per operation), so it stays a few seconds of `make test`.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.config import SchemathesisConfig

from reassignd.daemon.api import load_openapi
from tests.services.daemon import TOKEN, DaemonProcess

pytestmark = pytest.mark.slow

EXAMPLES = 15
ACCEPTED = ["2xx", "401", "403", "404", "409"]
#: Operations whose schema-valid requests may still be refused because of what the cluster holds.
STATE_DEPENDENT = {
    # A well-formed plan names topics, partitions and brokers the simulated cluster may not have (422).
    "submitPlan": ["422"],
    # A replication factor above the live brokers, or broker ids the cluster does not have (400).
    "createReplicaPlacement": ["400"],
    # The fuzzed daemon runs without proposals.enable (a warm Spark session would cost make test seconds):
    # every proposal is the documented 503; the proposals' shapes are tested in test_proposals.py.
    "proposePlan": ["503"],
}
#: Operations whose documented answer here is a 503, which schemathesis counts as a server error.
UNAVAILABLE_HERE = {"proposePlan"}
SERVER_ERROR_EXPECTED = {"not_a_server_error": {"enabled": False}}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _config() -> SchemathesisConfig:
    return SchemathesisConfig.from_dict(
        {
            "seed": 15,
            "generation": {"mode": "positive", "max-examples": EXAMPLES, "database": "none"},
            "checks": {
                "positive_data_acceptance": {"expected-statuses": ACCEPTED},
                "negative_data_rejection": {"enabled": False},
            },
            "operations": [
                {
                    "include-operation-id": operation,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": ACCEPTED + extra},
                        **(
                            {"not_a_server_error": {"enabled": False}}
                            if operation in UNAVAILABLE_HERE
                            else {}
                        ),
                    },
                }
                for operation, extra in STATE_DEPENDENT.items()
            ],
        }
    )


@pytest.fixture(scope="module")
def served_schema(fuzz_daemon: DaemonProcess) -> Any:
    return schemathesis.openapi.from_url(f"{fuzz_daemon.url}/openapi.json", config=_config())


OPERATIONS = sorted(
    operation["operationId"]
    for item in load_openapi()["paths"].values()
    for method, operation in item.items()
    if method in ("get", "post", "patch")
)


@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_the_served_api_conforms_to_its_document(
    served_schema: Any, fuzz_daemon: DaemonProcess, operation_id: str
) -> None:
    operation = served_schema.find_operation_by_id(operation_id)

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def conforms(case: Any) -> None:
        case.call_and_validate(base_url=fuzz_daemon.url, headers=AUTH, timeout=30)

    conforms()
