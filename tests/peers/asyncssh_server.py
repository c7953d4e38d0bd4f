"""asyncssh as an SSH server for sluice: accepts the given user key, and for
any exec request hashes stdin or sends data, without a shell.

Commands: "sha256" replies "<bytes> <hex>" for stdin; "send N" sends N
deterministic bytes; "exit N" exits with status N and writes "err" to stderr.

usage: asyncssh_server.py PORT HOSTKEY AUTHORIZED_KEYS
"""
import asyncio
import hashlib
import sys

import asyncssh


def pattern(n):
    block = hashlib.sha256(b"sluice").digest() * 2048
    out = bytearray()
    while len(out) < n:
        out += block
    return bytes(out[:n])


async def handle(process):
    cmd = (process.command or "").split()
    if cmd[:1] == ["sha256"]:
        h = hashlib.sha256()
        total = 0
        while True:
            chunk = await process.stdin.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
            total += len(chunk)
        process.stdout.write(f"{total} {h.hexdigest()}\n".encode())
        process.exit(0)
    elif cmd[:1] == ["send"]:
        process.stdout.write(pattern(int(cmd[1])))
        await process.stdout.drain()
        process.exit(0)
    elif cmd[:1] == ["exit"]:
        process.stderr.write(b"err\n")
        process.exit(int(cmd[1]))
    else:
        process.exit(127)


async def main():
    port, hostkey, authorized = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    await asyncssh.create_server(lambda: asyncssh.SSHServer(), "127.0.0.1", port,
                                 server_host_keys=[hostkey], authorized_client_keys=authorized,
                                 process_factory=handle, encoding=None)
    print("ready", flush=True)
    await asyncio.Future()


asyncio.run(main())
