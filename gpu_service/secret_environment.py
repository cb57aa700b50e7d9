"""Secrets leave the GPU service's environment once the settings have read them.

Workers run user-supplied models and datasets; the weights helper unpickles files an
administrator uploaded. Spawned processes inherit the parent's environment, so anything
left there (the service token, and in the single-host runner the web app's secret key
and demo password) would be one `os.environ` away from that code. The settings object
keeps what the service needs; the environment keeps nothing secret.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping

# Names that hold credentials by convention, and the URLs that embed them.
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_KEY|PRIVATE_KEY|ACCESS_KEY"
    r"|^DATABASE_URL$|^REDIS_URL$|^BROKER_URL$|^CELERY_BROKER_URL$",
    re.IGNORECASE,
)


def drop_secrets(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Remove every secret-looking variable; returns the names removed (never values)."""
    env = os.environ if environ is None else environ
    names = sorted(name for name in env if SECRET_NAME.search(name))
    for name in names:
        del env[name]
    return names
