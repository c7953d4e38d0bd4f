"""paramiko as a client that promises no more sessions: opens one session,
sends no-more-sessions@openssh.com, tries a second session (which the
server must refuse), then runs a command on the first.

usage: no_more_sessions.py PORT KEYFILE USER
prints: "second session: refused (...)" or "second session: opened", then
the command's output and exit status.
"""
import sys

import paramiko

port, keyfile, user = int(sys.argv[1]), sys.argv[2], sys.argv[3]
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
client.connect("127.0.0.1", port=port, username=user, key_filename=keyfile,
               look_for_keys=False, allow_agent=False, timeout=30)
t = client.get_transport()
first = t.open_session(timeout=30)
t.global_request("no-more-sessions@openssh.com", wait=False)
try:
    t.open_session(timeout=30)
    print("second session: opened")
except Exception as e:  # paramiko raises ChannelException (or SSHException)
    print(f"second session: refused ({e!r})")
first.exec_command("echo first still works")
out = b""
while True:
    chunk = first.recv(1 << 16)
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode())
print("exit", first.recv_exit_status())
client.close()
