"""response(): what a handler returns for a status or headers of its own, checked when it is made and
again when it is sent (routes_app.reply), since its headers map stays the program's to change."""

from apsi_lang.errors import ApsiError
from apsi_lang.values import show

NO_BODY = (204, 304)        # statuses HTTP sends without a body
SERVERS_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "upgrade",
                             "te", "trailer", "proxy-connection", "date", "server"})


def response(body=None, status=200, headers=None):
    """What a handler returns for a status or headers of its own; `body` is sent as JSON (text as
    text/plain)."""
    from .values import Response

    if type(status) is not int or not 200 <= status <= 599:
        # (1xx are not answers but notes before one: 101 would hand the connection over, 100 leave the
        # client waiting for the real answer)
        raise ApsiError(f"response: status must be an int from 200 to 599 (a handler's answer; 1xx are "
                        f"not final answers), not {show(status, True)}")
    if status in NO_BODY and body is not None:
        raise ApsiError(f"response: status {status} carries no body (HTTP sends none with it); write "
                        f"response(none, status={status}), or another status for a body")
    headers = {} if headers is None else headers
    if type(headers) is not dict or not all(type(k) is str and type(v) is str for k, v in headers.items()):
        raise ApsiError("response: headers must be a map of text to text, like {\"Cache-Control\": "
                        f"\"no-store\"}}, not {show(headers, True)}")
    for k, v in headers.items():
        if not k or any(c in k + v for c in "\r\n\0") or any(c in k for c in " :"):
            raise ApsiError(f"response: header {show(k, True)} cannot be sent (a name without spaces or "
                            "':', values without line breaks)")
        if k.lower() in SERVERS_HEADERS:
            # (a second Content-Length or a Transfer-Encoding beside it makes the answer's length
            # ambiguous: clients and proxies read it differently, and the server broke off the answer)
            raise ApsiError(f"response: header {show(k, True)} is the server's to set (it frames the "
                            "connection and the body); leave it out")
    return Response(body, status, dict(headers))
