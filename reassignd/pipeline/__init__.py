"""The balance-planning pipeline on Spark: snapshots -> DataFrames -> validation -> statistics -> rounds
of set-based moves -> plans and reports. Needs the `pipeline` extra (pyspark, pyarrow, pandas)."""
