"""A simulated Kafka cluster: a deterministic model in virtual time (model.py) behind a wire-protocol server.

The model follows Kafka's KRaft or ZooKeeper-mode controller (the scenario's `kafka` field, `KafkaVersion`),
its replication quotas and log dirs; docs/simulator.md lists each rule and its source. Drive it directly
with `SimCluster.from_scenario(load_scenario(...))` and `advance(seconds)`.
"""

from reassignd.sim.configs import ConfigEntry
from reassignd.sim.errors import KafkaError
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.model import SimBroker, SimCluster, SimPartition, SimTopic
from reassignd.sim.scenario import BrokerSpec, Scenario, TopicSpec, load_scenario

__all__ = [
    "BrokerSpec",
    "ConfigEntry",
    "KafkaError",
    "KafkaVersion",
    "Scenario",
    "SimBroker",
    "SimCluster",
    "SimPartition",
    "SimTopic",
    "TopicSpec",
    "load_scenario",
]
