"""A time limit on a request's head (its request line and headers), which uvicorn does not keep.

uvicorn times a connection out only between two requests (timeout_keep_alive, armed when a response
has been sent): a client that connects and sends nothing, or half a head and then waits ("slowloris"),
holds its connection, a file descriptor and its buffers forever, and with enough of them no one else
is served. The body and the answer have `timeout` each (http.within, deadlines.py); this gives the head
the same: `timeout` seconds from the connection (or from the end of the previous answer on a keep-alive
connection) to the end of the head, else a 408 and the connection closed; and at most HEAD_LIMIT
bytes, else a 431.

It subclasses the protocol uvicorn would choose (httptools or h11) and uses only what both share: the
`cycle` attribute, which each sets when a head has been read whole, and `transport`.
"""

import json

MESSAGE = ("reading the request took longer than timeout = {seconds:g} s (its headers never ended); send "
           "it again, or start the server with a larger timeout")
# The most bytes a head may take (request line and headers; the body has max_body). httptools has no
# limit of its own, so a client could send gigabytes of headers into the server's memory; browsers and
# proxies stay far below this (nginx's default is 32 KB)
HEAD_LIMIT = 64 * 1024
TOO_LARGE = (f"the request's headers are larger than {HEAD_LIMIT // 1024} KB (the request line and "
             "headers; the body has max_body); send fewer or shorter headers")


def _answer(status, words, message):
    body = json.dumps({"error": message, "status": status}, separators=(",", ":")).encode()
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % (status, words, len(body))) + body


def protocol(seconds):
    """uvicorn's automatic HTTP protocol class with the head's time limit."""
    from uvicorn.config import HTTP_PROTOCOLS
    from uvicorn.importer import import_from_string

    base = import_from_string(HTTP_PROTOCOLS["auto"])
    late = _answer(408, b"Request Timeout", MESSAGE.format(seconds=seconds))
    large = _answer(431, b"Request Header Fields Too Large", TOO_LARGE)

    class Timed(base):
        head_timer = None
        head_of = None              # the request cycle that was current when the timer was armed
        head_begun = False          # some bytes of the awaited head have arrived
        head_bytes = 0              # ... and how many

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def data_received(self, data):
            if self.head_timer is not None and self.head_of is not self.cycle:
                self._disarm()                  # (the timer was for a head that has since ended)
            awaited = self.cycle is None or self.cycle.response_complete
            if awaited:
                self._arm()                     # (a head is awaited: timed from the first of it)
                self.head_begun = True
                self.head_bytes += len(data)
            before = self.cycle
            super().data_received(data)
            if awaited and self.cycle is before and self.head_bytes > HEAD_LIMIT and \
                    not self.transport.is_closing():
                self._disarm()                  # (still no whole head, and already too large)
                self.transport.write(large)
                self.transport.close()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

        def _arm(self):
            if self.head_timer is None:
                self.head_of, self.head_begun, self.head_bytes = self.cycle, False, 0
                self.head_timer = self.loop.call_later(seconds, self._late)

        def _disarm(self):
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _late(self):
            self.head_timer = None
            if self.cycle is not self.head_of or self.transport.is_closing():
                return          # (the head ended in time; a next one is timed from its first bytes)
            if self.head_begun:
                self.transport.write(late)      # (a connection that never sent a byte is only closed)
            self.transport.close()

    Timed.__name__ = Timed.__qualname__ = f"Timed{base.__name__}"
    return Timed
