"""kafka-python, imported once without its import-time DeprecationWarnings.

kafka-python 3.0.12 loads its protocol schemas with importlib.resources.read_text (deprecated since Python
3.11), one warning per message class at import. They say nothing about our use, and under warnings-as-errors
(our tests) they would break the import, so the import is done here with that one category silenced.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka import TopicPartition as KpTopicPartition
    from kafka.admin import KafkaAdminClient

__all__ = ["KafkaAdminClient", "KpTopicPartition", "kafka_errors"]
