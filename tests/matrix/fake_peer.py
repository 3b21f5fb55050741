"""A stranger on the matrix's rendezvous port (tests/matrix/test_matrix_trust.sh).

  fake_peer.py serve PORTFILE silent    listen; accept, read, never answer
  fake_peer.py serve PORTFILE bye TEXT  listen; answer every HELLO with BYE TEXT
  fake_peer.py hello PORT LINE...       connect (retrying while nothing
                                        listens), send each LINE (escapes as
                                        in Python), print what comes back
                                        (repr, one line each) until BYE or
                                        the connection closes; the first line
                                        printed is "addr HOST:PORT" of ours
"""
import socket
import sys
import time


def serve(portfile, mode, text=""):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    import os
    os.rename(portfile + ".tmp", portfile)
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # kept open: the peer must see silence, not a close
        if mode == "bye":
            c.recv(4096)
            c.sendall(("BYE " + text + "\n").encode("latin-1"))


def hello(port, lines):
    end = time.monotonic() + 60
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", int(port)))
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)
    print("addr %s:%d" % c.getsockname()[:2], flush=True)
    for line in lines:
        c.sendall(line.encode("latin-1").decode("unicode_escape").encode("latin-1") + b"\n")
    buf = b""
    c.settimeout(120)
    while True:
        got = c.recv(4096)
        if not got:
            print("closed", flush=True)
            return
        buf += got
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            print(line.decode("latin-1"), flush=True)
            if line.startswith(b"BYE"):
                return


if sys.argv[1] == "serve":
    serve(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
else:
    hello(sys.argv[2], sys.argv[3:])
