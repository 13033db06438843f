"""reassignd: executes Kafka partition reassignments safely, from outside the brokers."""

__version__ = "0.1.0"
