"""Loaded by a test server's Python (its PYTHONPATH names this folder): every host name the process asks
`socket.getaddrinfo` for is appended to the file $MADLAB_LOOKUP_LOG, so a test can assert that the
server looked up no name on the internet. The file's first line, LOADED, shows the recorder ran in that
process. Nothing else changes: the real lookup still runs."""
import os
import socket

LOADED = "(recorder loaded)"
_real_getaddrinfo = socket.getaddrinfo


def _recording_getaddrinfo(host, *args, **kwargs):
    log = os.environ.get("MADLAB_LOOKUP_LOG")
    if log and host is not None:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{host.decode() if isinstance(host, bytes) else host}\n")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = _recording_getaddrinfo
if os.environ.get("MADLAB_LOOKUP_LOG"):
    with open(os.environ["MADLAB_LOOKUP_LOG"], "a", encoding="utf-8") as _out:
        _out.write(f"{LOADED}\n")
