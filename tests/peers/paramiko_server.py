"""paramiko as an SSH server for sluice: accepts the given user key, and for
any exec request hashes stdin or sends data, without a shell. paramiko
takes a client's guessed KEX packet as the real one even when the guess
was wrong (RFC 4253 7.1 says to ignore it), which sluice must survive.

Commands: "sha256" replies "<bytes> <hex>" for stdin; "send N" sends N
deterministic bytes; "exit N" exits with status N and writes "err" to stderr.

usage: paramiko_server.py PORT HOSTKEY AUTHORIZED_KEYS [DISABLED_KEX,...]
(prints "ready"); DISABLED_KEX makes it act like an older paramiko (before
5.0 it had no mlkem768x25519-sha256, sluice's first choice).
"""
import base64
import hashlib
import socket
import sys
import threading

import paramiko


def pattern(n):
    block = hashlib.sha256(b"sluice").digest() * 2048
    out = bytearray()
    while len(out) < n:
        out += block
    return bytes(out[:n])


class Server(paramiko.ServerInterface):
    def __init__(self, allowed):
        self.allowed = allowed
        self.command = None
        self.exec_event = threading.Event()

    def check_auth_publickey(self, username, key):
        blob = key.asbytes()
        return paramiko.AUTH_SUCCESSFUL if blob in self.allowed else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username):
        return "publickey"

    def check_channel_request(self, kind, chanid):
        if kind == "session":
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        self.command = command.decode()
        self.exec_event.set()
        return True


def serve(sock, hostkey, allowed, disabled):
    t = paramiko.Transport(sock, disabled_algorithms={"kex": disabled})
    t.add_server_key(hostkey)
    server = Server(allowed)
    try:
        t.start_server(server=server)
    except Exception:
        return
    chan = t.accept(30)
    if chan is None or not server.exec_event.wait(30):
        t.close()
        return
    cmd = server.command.split()
    status = 127
    if cmd[:1] == ["sha256"]:
        h, total = hashlib.sha256(), 0
        while True:
            chunk = chan.recv(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            total += len(chunk)
        chan.sendall(f"{total} {h.hexdigest()}\n".encode())
        status = 0
    elif cmd[:1] == ["send"]:
        chan.sendall(pattern(int(cmd[1])))
        status = 0
    elif cmd[:1] == ["exit"]:
        chan.sendall_stderr(b"err\n")
        status = int(cmd[1])
    chan.send_exit_status(status)
    chan.shutdown_write()
    chan.close()


def main():
    port, keyfile, authorized = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    disabled = sys.argv[4].split(",") if len(sys.argv) > 4 else []
    hostkey = paramiko.Ed25519Key(filename=keyfile)
    allowed = set()
    for line in open(authorized):
        parts = line.split()
        if len(parts) >= 2:
            allowed.add(base64.b64decode(parts[1]))
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)
    print("ready", flush=True)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=serve, args=(s, hostkey, allowed, disabled), daemon=True).start()


main()
