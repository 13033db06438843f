"""The asyncio daemon: controller loop, API server, metrics, and the tasks that supervise them."""
