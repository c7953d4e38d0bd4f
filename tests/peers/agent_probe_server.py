"""paramiko as a server that opens an auth-agent@openssh.com channel to its
client whether or not the client asked for agent forwarding (a hostile
server does that to use the client's keys). One connection, any public key
accepted; on exec it tries the agent channel and, if it opens, asks the
agent for its identities, then reports on the session channel:
"agent channel: refused" or "agent channel: N keys", exit status 0.

usage: agent_probe_server.py PORT HOSTKEY   (prints "ready" when listening)
"""
import socket
import struct
import sys
import threading

import paramiko

port, hostkey = int(sys.argv[1]), sys.argv[2]


class Server(paramiko.ServerInterface):
    def __init__(self):
        self.exec_event = threading.Event()
        self.agent_requested = False

    def check_auth_publickey(self, username, key):
        return paramiko.AUTH_SUCCESSFUL

    def get_allowed_auths(self, username):
        return "publickey"

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_forward_agent_request(self, channel):
        self.agent_requested = True
        return True

    def check_channel_exec_request(self, channel, command):
        self.exec_event.set()
        return True


def recv_exact(chan, n):
    data = b""
    while len(data) < n:
        chunk = chan.recv(n - len(data))
        if not chunk:
            raise EOFError("agent channel closed")
        data += chunk
    return data


def probe(t):
    try:
        chan = t.open_forward_agent_channel()
    except Exception:
        return "agent channel: refused"
    chan.sendall(struct.pack(">IB", 1, 11))  # SSH_AGENTC_REQUEST_IDENTITIES
    (n,) = struct.unpack(">I", recv_exact(chan, 4))
    reply = recv_exact(chan, n)
    chan.close()
    if reply[0] != 12:
        return "agent channel: bad answer"
    return "agent channel: %d keys" % struct.unpack(">I", reply[1:5])[0]


sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", port))
sock.listen(1)
print("ready", flush=True)
conn, _ = sock.accept()
t = paramiko.Transport(conn)
t.add_server_key(paramiko.Ed25519Key.from_private_key_file(hostkey))
server = Server()
t.start_server(server=server)
session = t.accept(30)
if session is None or not server.exec_event.wait(30):
    sys.exit("no session")
result = probe(t)
session.sendall((result + "\n").encode())
session.send_exit_status(0)
session.shutdown_write()
session.close()
t.join(5) if hasattr(t, "join") else None
t.close()
