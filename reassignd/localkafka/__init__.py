"""Real Apache Kafka on loopback, from the jars `make setup` fetches: the cluster the real-Kafka tests and
`reassignd demo --kafka` start (cluster.py), and real records written into it (load.py)."""
