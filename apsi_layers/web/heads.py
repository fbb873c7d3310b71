"""A time limit on a request's head (its request line and headers), which uvicorn does not keep.

uvicorn times a connection out only between two requests (timeout_keep_alive, armed when a response
has been sent): a client that connects and sends nothing, or half a head and then waits ("slowloris"),
holds its connection, a file descriptor and its buffers forever, and with enough of them no one else
is served. The body and the answer have `timeout` each (http.within, deadlines.py); this gives the head
the same: `timeout` seconds from the connection (or from the end of the previous answer on a keep-alive
connection) to the end of the head, else a 408 and the connection closed.

It subclasses the protocol uvicorn would choose (httptools or h11) and uses only what both share: the
`cycle` attribute, which each sets when a head has been read whole, and `transport`.
"""

import json

MESSAGE = ("reading the request took longer than timeout = {seconds:g} s (its headers never ended); send "
           "it again, or start the server with a larger timeout")


def protocol(seconds):
    """uvicorn's automatic HTTP protocol class with the head's time limit."""
    from uvicorn.config import HTTP_PROTOCOLS
    from uvicorn.importer import import_from_string

    base = import_from_string(HTTP_PROTOCOLS["auto"])
    body = json.dumps({"error": MESSAGE.format(seconds=seconds), "status": 408}).encode()
    late = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % len(body)) + body

    class Timed(base):
        head_timer = None
        head_of = None              # the request cycle that was current when the timer was armed
        head_begun = False          # some bytes of the awaited head have arrived

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def data_received(self, data):
            if self.head_timer is not None and self.head_of is not self.cycle:
                self._disarm()                  # (the timer was for a head that has since ended)
            if self.cycle is None or self.cycle.response_complete:
                self._arm()                     # (a head is awaited: timed from the first of it)
                self.head_begun = True
            super().data_received(data)

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

        def _arm(self):
            if self.head_timer is None:
                self.head_of, self.head_begun = self.cycle, False
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
