"""A time limit on a request's head (its request line and headers), which uvicorn does not keep.

uvicorn times a connection out only between two requests (timeout_keep_alive, armed when a response
has been sent): a client that connects and sends nothing, or half a head and then waits ("slowloris"),
holds its connection, a file descriptor and its buffers forever, and with enough of them no one else
is served. The body and the answer have `timeout` each (http.within, deadlines.py); this gives the head
the same: `timeout` seconds from the connection (or from the end of the previous answer on a keep-alive
connection) to the end of the head, else a 408 and the connection closed; and at most HEAD_LIMIT
bytes, else a 431.

Every byte of every head counts, whatever the connection is doing (a head pipelined behind a request
in flight too): with httptools, the parser's callbacks count a head's request line and headers as they
complete (a whole head arriving in one read is measured exactly), and a read that is head from end to
end is counted whole, so a head that never ends is refused once 64 KB of it (after the read it began
in) have arrived. Once refused, the rest of the connection's bytes are ignored and it is closed.

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

    callbacks = hasattr(base, "on_header")      # httptools: the parser calls back with each part

    class Timed(base):
        head_timer = None
        head_of = None              # the request cycle that was current when the timer was armed
        head_begun = False          # some bytes of the awaited head have arrived
        head_bytes = 0              # ... and how many (h11; with httptools: the head's url and headers)
        head_raw = 0                # httptools: bytes of reads that were head from end to end
        in_head = False             # httptools: a head has begun and not ended
        heads = 0                   # httptools: heads begun on this connection
        refused = False             # a 431 was sent: the rest of the connection is ignored

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def data_received(self, data):
            if self.refused:
                return
            if self.head_timer is not None and self.head_of is not self.cycle:
                self._disarm()                  # (the timer was for a head that has since ended)
            awaited = self.cycle is None or self.cycle.response_complete
            if awaited:
                self._arm()                     # (a head is awaited: timed from the first of it)
                self.head_begun = True
            inside, heads, before = self.in_head, self.heads, self.cycle
            super().data_received(data)
            if callbacks:
                # every byte of a read that began and ended inside one head is head (pipelined
                # behind a request in flight too); a head that began or ended within a read is counted
                # exactly by the callbacks below
                if inside and self.in_head and self.heads == heads:
                    self.head_raw += len(data)
                    self._check()
            elif awaited:
                self.head_bytes += len(data)
                if self.cycle is before:
                    self._check()               # (still no whole head, and already too large)

        def on_message_begin(self):
            if self.refused:
                return
            self.in_head, self.head_bytes, self.head_raw = True, 0, 0
            self.heads += 1
            super().on_message_begin()

        def on_url(self, url):
            if not self.refused:
                self.head_bytes += len(url)
                self._check()
            if not self.refused:
                super().on_url(url)

        def on_header(self, name, value):
            if not self.refused:
                self.head_bytes += len(name) + len(value) + 4       # ("name: value\r\n")
                self._check()
            if not self.refused:
                super().on_header(name, value)

        def on_headers_complete(self):
            self.in_head = False
            if not self.refused:
                super().on_headers_complete()

        def on_body(self, body):
            if not self.refused:
                super().on_body(body)

        def on_message_complete(self):
            if not self.refused:
                super().on_message_complete()

        def _check(self):
            if max(self.head_bytes, self.head_raw) > HEAD_LIMIT and not self.transport.is_closing():
                self.refused = True
                self._disarm()
                self.transport.write(large)
                self.transport.close()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

        def _arm(self):
            if self.head_timer is None:
                self.head_of, self.head_begun = self.cycle, False
                if not callbacks:
                    self.head_bytes = 0
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
