"""One-shot job of the compose stack: random secrets written once into the shared `secrets` volume.

Nothing secret is committed to the repository: each `docker compose up` on a fresh volume generates its own
API token and MQTT command HMAC secret, readable by the reassignd user (uid 10001) alone (mode 0400: reassignd
refuses a secret file that group or others can read), and the Grafana admin password, readable by Grafana
(uid 472). An existing file is kept, so restarts do not rotate them; its owner and mode are corrected.
"""

import os
import secrets
import sys
from pathlib import Path

DIRECTORY = Path(sys.argv[1] if len(sys.argv) > 1 else "/run/reassignd-secrets")
REASSIGND_UID = 10001
#: name -> (owner uid or None to keep root, mode)
SECRETS = {
    "api-token": (REASSIGND_UID, 0o400),
    "mqtt-hmac-secret": (REASSIGND_UID, 0o400),
    "grafana-admin-password": (None, 0o444),
}

for name, (owner, mode) in SECRETS.items():
    path = DIRECTORY / name
    if path.exists():
        print(f"secrets: {path} exists, kept")
    else:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")  # 43 characters: reassignd wants 32 at least
        print(f"secrets: wrote {path}")
    if owner is not None:
        os.chown(path, owner, owner)
    os.chmod(path, mode)
