"""One-shot job of the compose stack: random secrets written once into the shared `secrets` volume.

Nothing secret is committed to the repository: each `docker compose up` on a fresh volume generates its own
API token, MQTT command HMAC secret and Grafana admin password, readable by the reassignd user (uid 10001)
and by Grafana (uid 472). An existing file is kept, so restarts do not rotate them.
"""

import os
import secrets
import sys
from pathlib import Path

DIRECTORY = Path(sys.argv[1] if len(sys.argv) > 1 else "/run/reassignd-secrets")
NAMES = ("api-token", "mqtt-hmac-secret", "grafana-admin-password")

for name in NAMES:
    path = DIRECTORY / name
    if path.exists():
        print(f"secrets: {path} exists, kept")
        continue
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(secrets.token_urlsafe(32) + "\n")
    print(f"secrets: wrote {path}")
