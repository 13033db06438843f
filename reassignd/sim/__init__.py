"""A simulated Kafka cluster: a deterministic model in virtual time (model.py) behind a wire-protocol server.

The model follows Kafka's KRaft controller and replication quotas; docs/simulator.md lists each rule and its
source. Drive it directly with `SimCluster.from_scenario(load_scenario(...))` and `advance(seconds)`.
"""

from reassignd.sim.configs import ConfigEntry
from reassignd.sim.errors import KafkaError
from reassignd.sim.model import SimBroker, SimCluster, SimPartition, SimTopic
from reassignd.sim.scenario import BrokerSpec, Scenario, TopicSpec, load_scenario

__all__ = [
    "BrokerSpec",
    "ConfigEntry",
    "KafkaError",
    "Scenario",
    "SimBroker",
    "SimCluster",
    "SimPartition",
    "SimTopic",
    "TopicSpec",
    "load_scenario",
]
