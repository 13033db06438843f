"""The balance-planning pipeline on Spark: snapshots -> DataFrames -> one grouped job per fleet in which
each cluster is validated and planned by the pure core (reassignd.placement.optimizer) -> plans and
reports. Needs the `pipeline` extra (pyspark, pyarrow, pandas)."""
