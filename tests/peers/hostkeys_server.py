"""paramiko as an SSH server announcing host keys (OpenSSH PROTOCOL 2.5,
hostkeys-00@openssh.com) and answering hostkeys-prove-00@openssh.com, for
sluice's UpdateHostKeys: with "good" each proof is the key's signature over
string "hostkeys-prove-00@openssh.com" || string session_id || string key;
with "bad" the second key's proof is signed by the first key. Exec requests
just exit 0.

usage: hostkeys_server.py PORT HOSTKEY EXTRA_HOSTKEY AUTHORIZED_KEYS good|bad
(prints "ready").
"""
import base64
import socket
import sys
import threading

import paramiko


def load(path):
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key_file(path)
        except Exception:
            pass
    raise SystemExit(f"cannot load {path}")


def ssh_string(b):
    return len(b).to_bytes(4, "big") + b


class Server(paramiko.ServerInterface):
    def __init__(self, allowed, keys, mode):
        self.allowed, self.keys, self.mode = allowed, keys, mode
        self.transport = None
        self.exec_event = threading.Event()

    def check_auth_publickey(self, username, key):
        return paramiko.AUTH_SUCCESSFUL if key.asbytes() in self.allowed else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username):
        return "publickey"

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        self.exec_event.set()
        return True

    def check_global_request(self, kind, m):
        if kind != "hostkeys-prove-00@openssh.com":
            return False
        by_blob = {k.asbytes(): k for k in self.keys}
        sigs = []
        while m.get_remainder():
            blob = m.get_binary()
            key = by_blob.get(blob)
            if key is None:
                return False
            if self.mode == "bad" and key is self.keys[1]:
                key = self.keys[0]
            data = (ssh_string(b"hostkeys-prove-00@openssh.com")
                    + ssh_string(self.transport.session_id) + ssh_string(blob))
            alg = "rsa-sha2-512" if key.get_name() == "ssh-rsa" else None
            sigs.append(key.sign_ssh_data(data, alg).asbytes())
        return tuple(sigs)


def serve(sock, keys, allowed, mode):
    t = paramiko.Transport(sock)
    t.add_server_key(keys[0])
    server = Server(allowed, keys, mode)
    server.transport = t
    try:
        t.start_server(server=server)
    except Exception:
        return
    chan = t.accept(30)
    if chan is None:
        t.close()
        return
    t.global_request("hostkeys-00@openssh.com", tuple(k.asbytes() for k in keys), wait=False)
    if server.exec_event.wait(30):
        # Time for the client's prove request before the session ends.
        threading.Event().wait(1)
        chan.send_exit_status(0)
        chan.shutdown_write()
        chan.close()
    threading.Event().wait(1)
    t.close()


def main():
    port, hostkey, extra, authorized, mode = sys.argv[1:6]
    keys = [load(hostkey), load(extra)]
    allowed = set()
    for line in open(authorized):
        parts = line.split()
        if len(parts) >= 2:
            allowed.add(base64.b64decode(parts[1]))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", int(port)))
    ls.listen(8)
    print("ready", flush=True)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=serve, args=(s, keys, allowed, mode), daemon=True).start()


main()
