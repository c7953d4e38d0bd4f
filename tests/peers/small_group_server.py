"""A group exchange server that hands out a group smaller than asked.

usage: small_group_server.py PORT HOSTKEY AUTHORIZED_KEYS MODULI

paramiko answers KEX_DH_GEX_REQUEST with the closest group it has even
when that is outside the client's [min, max]; MODULI holds only 1024-bit
primes, so a client asking min 2048 gets 1024 and must refuse it. Serves
one connection; prints "ready" once listening.
"""
import socket
import sys

import paramiko

port, hostkey, _authorized, moduli = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
assert paramiko.Transport.load_server_moduli(moduli)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(1)
print("ready", flush=True)
conn, _ = ls.accept()
t = paramiko.Transport(conn)
t.add_server_key(paramiko.Ed25519Key.from_private_key_file(hostkey))
t._preferred_kex = ("diffie-hellman-group-exchange-sha256",)
try:
    t.start_server(server=paramiko.ServerInterface())
    t.join(20)
except Exception as e:  # the client's disconnect ends the key exchange
    print("server:", type(e).__name__, flush=True)
