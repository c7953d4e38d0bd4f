"""paramiko as an SSH client: run a command, send stdin, print SHA-256 of stdout and the exit status.

usage: paramiko_client.py PORT KEYFILE USER COMMAND < input
"""
import hashlib
import sys

import paramiko

port, keyfile, user, command = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
client.connect("127.0.0.1", port=port, username=user, key_filename=keyfile,
               look_for_keys=False, allow_agent=False, timeout=30)
chan = client.get_transport().open_session()
chan.exec_command(command)
data = sys.stdin.buffer.read()
view = memoryview(data)
sent = 0
h = hashlib.sha256()
while sent < len(data) or not chan.exit_status_ready():
    if sent < len(data) and chan.send_ready():
        sent += chan.send(view[sent:sent + 65536])
        if sent == len(data):
            chan.shutdown_write()
    while chan.recv_ready():
        h.update(chan.recv(1 << 20))
    if sent == len(data) and chan.exit_status_ready():
        break
if not data:
    chan.shutdown_write()
while True:
    chunk = chan.recv(1 << 20)
    if not chunk:
        break
    h.update(chunk)
print(h.hexdigest(), chan.recv_exit_status())
client.close()
