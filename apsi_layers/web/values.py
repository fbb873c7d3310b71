"""What Apsi handlers see and give back: a request and a response, plain data only.

Everything a handler receives is attack surface, so a request holds str, int and maps/lists of them,
never a starlette object; `request.json` is the parsed body (maps, lists, strings, numbers, none) and
raises the parse error, with its line and column, when the body is not JSON.
"""

from apsi_lang.errors import ApsiError


class BodyNotJson(ApsiError):
    """request.json of a body that is not JSON: the client's mistake, answered with 400."""


class Request:
    __apsi_attrs__ = frozenset({"method", "path", "query", "headers", "json", "text"})
    __apsi_type__ = "request"

    def __init__(self, method, path, query, headers, text, parsed, problem):
        self.method, self.path, self.query, self.headers, self.text = method, path, query, headers, text
        self._parsed, self._problem = parsed, problem

    @property
    def json(self):
        if self._problem is not None:
            raise BodyNotJson(f"request.json: {self._problem}")
        return self._parsed

    def __repr__(self):
        return f"request({self.method} {self.path})"


class Response:
    __apsi_attrs__ = frozenset({"body", "status", "headers"})
    __apsi_type__ = "response"

    def __init__(self, body, status, headers):
        self.body, self.status, self.headers = body, status, headers

    def __repr__(self):
        return f"response(status={self.status})"
