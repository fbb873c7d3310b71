"""The options serve_model and serve share, checked before anything listens."""

import re
from dataclasses import dataclass

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "ki": 1024, "kib": 1024, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30}


@dataclass(frozen=True)
class ServerOptions:
    host: str
    port: int
    max_body: int           # bytes
    timeout: float          # seconds a request may take (reading it and answering it)
    log: bool


def server_options(fn, host, port, max_body, timeout, log):
    if type(host) is not str or not host or any(c.isspace() for c in host):
        raise ApsiError(f"{fn}: host must be an address to listen on such as \"127.0.0.1\" (this machine "
                        f"only) or \"0.0.0.0\" (every network), not {show(host, True)}")
    if type(port) is not int or not 0 < port < 65536:
        raise ApsiError(f"{fn}: port must be an int from 1 to 65535, not {show(port, True)}")
    if type(log) is not bool:
        raise ApsiError(f"{fn}: log must be true or false, not {show(log, True)}")
    return ServerOptions(host=host, port=port, max_body=size_arg(fn, max_body),
                         timeout=seconds_arg(fn, "timeout", timeout), log=log)


def size_arg(fn, value):
    """Bytes from an int or a text such as "1MB", "512kb", "2MiB"."""
    if type(value) is int and value > 0:
        return value
    m = _SIZE.match(value) if type(value) is str else None
    if m and m.group(2).lower() in _UNITS and float(m.group(1)) > 0:
        return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    raise ApsiError(f"{fn}: max_body must be a positive number of bytes or a size such as \"1MB\" or "
                    f"\"512KB\", not {show(value, True)}")


def seconds_arg(fn, name, value):
    if type(value) in (int, float) and value > 0:
        return float(value)
    raise ApsiError(f"{fn}: {name} must be a positive number of seconds, not {show(value, True)}")


def count_arg(fn, name, value, what):
    if type(value) is int and value > 0:
        return value
    raise ApsiError(f"{fn}: {name} must be a positive int ({what}), not {show(value, True)}")


def wait_arg(fn, value):
    if type(value) in (int, float) and value >= 0:
        return float(value) / 1000.0
    raise ApsiError(f"{fn}: max_wait_ms must be a number of milliseconds >= 0 (how long the first request "
                    f"of a batch waits for others), not {show(value, True)}")


def path_arg(fn, name, value):
    if type(value) is str and value.startswith("/") and not any(c.isspace() for c in value):
        return value
    raise ApsiError(f"{fn}: {name} must be a URL path starting with '/', such as \"/predict\", "
                    f"not {show(value, True)}")
