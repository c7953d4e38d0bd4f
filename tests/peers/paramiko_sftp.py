#!/usr/bin/env python3
"""paramiko's SFTPClient against sluiced's internal-sftp.

usage: paramiko_sftp.py PORT KEY USER MODE ARG
  basic DIR     write stdin's bytes to DIR/p.bin, read back, stat, listdir,
                rename, mkdir/rmdir, remove; prints one line per check
  sparse PATH   writes 4 bytes past 5 GiB, prints the size and those bytes
  readonly DIR  tries to write and create; prints each error's errno
"""
import hashlib
import sys

import paramiko


def connect(port, key, user):
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    c.connect("127.0.0.1", port=int(port), username=user, key_filename=key,
              allow_agent=False, look_for_keys=False, timeout=20)
    return c, c.open_sftp()


def basic(sftp, d):
    data = sys.stdin.buffer.read()
    p = d + "/p.bin"
    with sftp.open(p, "wb") as f:
        f.set_pipelined(True)
        f.write(data)
    with sftp.open(p, "rb") as f:
        f.prefetch()
        back = f.read()
    print("sha256", hashlib.sha256(back).hexdigest())
    print("size", sftp.stat(p).st_size)
    sftp.mkdir(d + "/sub")
    sftp.rename(p, d + "/sub/q.bin")
    print("listdir", ",".join(sorted(sftp.listdir(d + "/sub"))))
    print("lstat_mode", oct(sftp.lstat(d + "/sub/q.bin").st_mode))
    sftp.remove(d + "/sub/q.bin")
    sftp.rmdir(d + "/sub")
    print("after", ",".join(sorted(sftp.listdir(d))))
    try:
        sftp.stat(d + "/missing")
    except IOError as e:
        print("missing", e.errno)


def sparse(sftp, p):
    off = 5 << 30
    with sftp.open(p, "wb") as f:
        f.seek(off)
        f.write(b"tail")
    print("size", sftp.stat(p).st_size)
    with sftp.open(p, "rb") as f:
        f.seek(off)
        print("bytes", f.read(4).decode())
        f.seek(1 << 30)
        print("hole", f.read(4).hex())


def readonly(sftp, d):
    for what, op in [
        ("put", lambda: sftp.open(d + "/new.bin", "wb").write(b"x")),
        ("mkdir", lambda: sftp.mkdir(d + "/newdir")),
        ("remove", lambda: sftp.remove(d + "/keep.bin")),
        ("chmod", lambda: sftp.chmod(d + "/keep.bin", 0o600)),
    ]:
        try:
            op()
            print(what, "ok")
        except IOError as e:
            print(what, e.errno, e.strerror)
    with sftp.open(d + "/keep.bin", "rb") as f:
        print("read", f.read().decode())


def main():
    port, key, user, mode, arg = sys.argv[1:6]
    c, sftp = connect(port, key, user)
    {"basic": basic, "sparse": sparse, "readonly": readonly}[mode](sftp, arg)
    sftp.close()
    c.close()


main()
