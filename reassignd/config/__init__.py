"""reassignd's configuration: a schema of flat dotted keys, loaded from TOML and the environment.

config = load_config("config/reassignd.toml", os.environ)   # raises InvalidInputError with every problem
config["controller.cycle.interval.seconds"]                  # typed value (None when unset)
config.limits()                                              # the engine's Limits
config.client_settings()                                     # librdkafka properties, secrets revealed
result = reload_config(config)                               # SIGHUP: result.config is what is in force
"""

from reassignd.config.keys import SECTIONS, schema
from reassignd.config.loader import RUN_FLAG_KEYS, Config, load_config, read_toml, run_overrides
from reassignd.config.reload import ReloadResult, reload_config
from reassignd.config.schema import ConfigKey, Secret, env_var_for

__all__ = [
    "RUN_FLAG_KEYS",
    "SECTIONS",
    "Config",
    "ConfigKey",
    "ReloadResult",
    "Secret",
    "env_var_for",
    "load_config",
    "read_toml",
    "reload_config",
    "run_overrides",
    "schema",
]
