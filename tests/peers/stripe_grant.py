"""paramiko as a client asking sluiced for striping grants (stripe-v00@sluice.dev).

usage: stripe_grant.py PORT KEYFILE USER REQUEST...
Each REQUEST is a number of secondaries wanted, or "bad" for malformed data.
Prints one line per request: "granted ALLOWED REFLEN SECRETLEN", "declined",
or "closed" once the server has ended the connection.
"""
import sys
import time

import paramiko

port, keyfile, user = int(sys.argv[1]), sys.argv[2], sys.argv[3]
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
client.connect("127.0.0.1", port=port, username=user, key_filename=keyfile,
               look_for_keys=False, allow_agent=False, timeout=30)
t = client.get_transport()
for req in sys.argv[4:]:
    data = ("bad",) if req == "bad" else (int(req),)
    reply = t.global_request("stripe-v00@sluice.dev", data, wait=True)
    if reply is None:
        time.sleep(0.3)
        print("declined" if t.is_active() else "closed", flush=True)
        continue
    allowed = reply.get_int()
    ref = reply.get_binary()
    secret = reply.get_binary()
    rest = reply.get_remainder()
    print("granted", allowed, len(ref), len(secret), *(["extra"] if rest else []), flush=True)
client.close()
