"""Plan rehearsal: the real engine against a simulated copy of the cluster, in virtual time."""

from reassignd.rehearsal.driver import RehearsalResult, Sample, Stuck, cluster_from_snapshot, rehearse

__all__ = ["RehearsalResult", "Sample", "Stuck", "cluster_from_snapshot", "rehearse"]
