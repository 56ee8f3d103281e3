"""Minimal HTTP/1.1 keep-alive client for the live benchmarks.

Why not http.client: on a 2-core machine shared with the controller, a
benchmark client must cost far less CPU per request than the server it
measures.  This module speaks just enough HTTP/1.1 over raw sockets
(Content-Length and chunked bodies, keep-alive, reconnect on close) and
drives C concurrent connections from ONE thread with `selectors`, so no GIL
hand-off happens per request.  Each connection has at most one request in
flight (no pipelining), which is what C concurrent clients do.

Loops are bounded by a request count and a deadline.  Only 127.0.0.1 is
ever contacted (the callers pass it; `connect` refuses anything else).

Python standard library only (Debian's /usr/bin/python3).
"""
import json
import selectors
import socket
import time

LOOPBACK = ("127.0.0.1", "localhost")


class HttpError(Exception):
    pass


def _connect(host, port, timeout=10.0):
    if host not in LOOPBACK:
        raise ValueError("benchmarks talk to 127.0.0.1 only, not %r" % host)
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def build_request(method, path, token=None, body=None, host="127.0.0.1"):
    """Returns the request as bytes (body: bytes, str or a JSON-able value)."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body, separators=(",", ":"))
    if isinstance(body, str):
        body = body.encode()
    h = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host,
         "Connection: keep-alive"]
    if token:
        h.append("Authorization: Bearer %s" % token)
    if body is not None:
        h.append("Content-Type: application/json")
        h.append("Content-Length: %d" % len(body))
    elif method in ("POST", "PUT"):
        h.append("Content-Length: 0")
    return ("\r\n".join(h) + "\r\n\r\n").encode() + (body or b"")


class _Parser:
    """Incremental HTTP/1.1 response parser for one connection."""

    def __init__(self):
        self.buf = bytearray()
        self.reset()

    def reset(self):
        self.status = None
        self.headers = None
        self.body_start = None
        self.length = None
        self.chunked = False
        self.close = False
        self.parts = None  # a Content-Length body: its reads, joined once
        self.have = 0

    def feed(self, data):
        if self.parts is not None:
            self.parts.append(data)
            self.have += len(data)
        else:
            self.buf += data

    def take(self):
        """Returns (status, body bytes, close) once a whole response is in."""
        if self.status is None:
            i = self.buf.find(b"\r\n\r\n")
            if i < 0:
                return None
            head = bytes(self.buf[:i]).decode("latin-1").split("\r\n")
            parts = head[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise HttpError("bad status line %r" % head[0])
            self.status = int(parts[1])
            self.headers = {}
            for line in head[1:]:
                k, _, v = line.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            te = self.headers.get("transfer-encoding", "").lower()
            self.chunked = "chunked" in te
            if not self.chunked:
                self.length = int(self.headers.get("content-length", "0"))
            self.close = (self.headers.get("connection", "").lower() == "close"
                          or parts[0] == "HTTP/1.0")
            self.body_start = i + 4
            if not self.chunked:
                # Appending a large body's reads to one bytearray re-copies
                # it as it grows (9 ms of a 5 MB reply): keep the reads in
                # a list and join them once.
                self.parts = [bytes(self.buf[self.body_start:])]
                self.have = len(self.parts[0])
                del self.buf[:]
        if not self.chunked:
            if self.have < self.length:
                return None
            data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
            body = data[:self.length]
            self.buf = bytearray(data[self.length:])
        else:
            body = bytearray()
            pos = self.body_start
            while True:
                j = self.buf.find(b"\r\n", pos)
                if j < 0:
                    return None
                n = int(bytes(self.buf[pos:j]).split(b";")[0], 16)
                if n == 0:
                    k = self.buf.find(b"\r\n\r\n", j)
                    if k < 0:
                        return None
                    end = k + 4
                    break
                if len(self.buf) < j + 2 + n + 2:
                    return None
                body += self.buf[j + 2:j + 2 + n]
                pos = j + 2 + n + 2
            body = bytes(body)
            del self.buf[:end]
        st, close = self.status, self.close
        self.reset()
        return st, body, close


class Conn:
    """One blocking keep-alive connection (for sequential requests)."""

    def __init__(self, port, token=None, host="127.0.0.1", timeout=30.0):
        self.port, self.token, self.host = port, token, host
        self.timeout = timeout
        self.sock = None
        self.parser = _Parser()

    def _ensure(self):
        if self.sock is None:
            self.sock = _connect(self.host, self.port, self.timeout)
            self.parser = _Parser()

    def request_raw(self, raw):
        """Sends prepared bytes, returns (status, body bytes)."""
        for attempt in (0, 1):
            self._ensure()
            try:
                self.sock.sendall(raw)
                while True:
                    r = self.parser.take()
                    if r is not None:
                        break
                    d = self.sock.recv(262144)
                    if not d:
                        raise ConnectionResetError("server closed")
                    self.parser.feed(d)
            except (ConnectionError, BrokenPipeError):
                self.close()
                if attempt:
                    raise
                continue
            st, body, close = r
            if close:
                self.close()
            return st, body
        raise HttpError("unreachable")

    def request(self, method, path, body=None):
        st, b = self.request_raw(build_request(method, path, self.token, body,
                                               self.host))
        try:
            js = json.loads(b) if b else None
        except ValueError:
            js = None
        return st, js, b

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None


def run_load(port, make_request, n, conns, deadline_s, expect=(200, 201),
             keep_bodies=False, host="127.0.0.1"):
    """Sends n requests over `conns` keep-alive connections from one thread.

    make_request(i) -> bytes builds request i.  Stops at n responses or when
    deadline_s seconds have passed, whichever comes first.  Returns a dict:
    sent, done, ok, errors (status -> count), elapsed_s, latencies_s (one per
    completed request, send to last byte), bodies (if keep_bodies), cpu_s
    (this process's CPU time during the run), first_error (body text).
    """
    sel = selectors.DefaultSelector()
    socks = []
    state = {}
    next_i = 0
    res = {"sent": 0, "done": 0, "ok": 0, "errors": {}, "latencies_s": [],
           "bodies": [] if keep_bodies else None, "first_error": None,
           "reconnects": 0}

    def start(s):
        nonlocal next_i
        if next_i >= n:
            return False
        raw = make_request(next_i)
        st = state[s]
        st["i"] = next_i
        st["t"] = time.perf_counter()
        st["raw"] = raw
        next_i += 1
        res["sent"] += 1
        s.sendall(raw)  # requests are small: fits the socket buffer
        return True

    def open_conn():
        s = _connect(host, port)
        s.setblocking(False)
        state[s] = {"p": _Parser(), "i": None, "t": 0.0, "raw": None}
        sel.register(s, selectors.EVENT_READ)
        socks.append(s)
        return s

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    end = t0 + deadline_s
    try:
        for _ in range(max(1, conns)):
            s = open_conn()
            if not start(s):
                break
        active = sum(1 for s in socks if state[s]["i"] is not None)
        while active and res["done"] < n:
            now = time.perf_counter()
            if now >= end:
                break
            for key, _ in sel.select(timeout=min(1.0, end - now)):
                s = key.fileobj
                st = state[s]
                try:
                    d = s.recv(262144)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    d = b""
                if not d:
                    # Server closed: resend the in-flight request once on a
                    # fresh connection.
                    sel.unregister(s)
                    s.close()
                    socks.remove(s)
                    raw = st["raw"]
                    active -= 1
                    del state[s]
                    if raw is not None and st["i"] is not None:
                        res["reconnects"] += 1
                        if res["reconnects"] > 1000:
                            raise HttpError("server keeps closing connections")
                        ns = open_conn()
                        state[ns].update(i=st["i"], t=st["t"], raw=raw)
                        ns.sendall(raw)
                        active += 1
                    continue
                st["p"].feed(d)
                while True:
                    r = st["p"].take()
                    if r is None:
                        break
                    code, body, close = r
                    res["latencies_s"].append(time.perf_counter() - st["t"])
                    res["done"] += 1
                    if code in expect:
                        res["ok"] += 1
                    else:
                        res["errors"][code] = res["errors"].get(code, 0) + 1
                        if res["first_error"] is None:
                            res["first_error"] = body[:500].decode("utf-8",
                                                                   "replace")
                    if keep_bodies:
                        res["bodies"].append(body)
                    st["i"] = None
                    st["raw"] = None
                    if close:
                        sel.unregister(s)
                        s.close()
                        socks.remove(s)
                        del state[s]
                        active -= 1
                        if next_i < n and time.perf_counter() < end:
                            ns = open_conn()
                            active += 1
                            if not start(ns):
                                active -= 1
                        break
                    if time.perf_counter() >= end or not start(s):
                        active -= 1
                    break  # one request in flight per connection
    finally:
        res["elapsed_s"] = time.perf_counter() - t0
        res["cpu_s"] = time.process_time() - cpu0
        for s in socks:
            try:
                sel.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()
        sel.close()
    return res
