"""Real Apache Kafka on loopback, from the jars `make setup` fetches: the cluster the real-Kafka tests and
`reassignd demo --kafka` start (cluster.py), real records written into it (load.py), what the brokers say,
read with clients of their own to judge the daemon from the brokers' side (probe.py), and Kafka's own
reassignment tool beside it (tools.py); the tests and bench/ use all four."""
