"""Pure replica placement (KIP-879) and the balance rules every planner shares (KIP-166)."""

from reassignd.placement.api import create_replica_placement, load_placer, placer_names
from reassignd.placement.base import ClusterView, PlacementSpec, ReplicaPlacer
from reassignd.placement.kafka import KafkaDefaultPlacer, KafkaRackAwarePlacer, kafka_generate
from reassignd.placement.multilevel import MultiLevelRackAwarePlacer
from reassignd.placement.rules import is_valid_move, move_violation, spread_violations
from reassignd.placement.topology import Topology

__all__ = [
    "ClusterView",
    "KafkaDefaultPlacer",
    "KafkaRackAwarePlacer",
    "MultiLevelRackAwarePlacer",
    "PlacementSpec",
    "ReplicaPlacer",
    "Topology",
    "create_replica_placement",
    "is_valid_move",
    "kafka_generate",
    "load_placer",
    "move_violation",
    "placer_names",
    "spread_violations",
]
