// sftppeer: a third-party SSH peer for sluice's tests (tests/peers_thirdparty.rs),
// written on Go's golang.org/x/crypto/ssh and github.com/pkg/sftp as Debian
// packages them (GO111MODULE=off, GOPATH=/usr/share/gocode).
//
//	sftppeer client HOST:PORT USER KEY HOSTKEY.pub FILE REMOTE
//	    exec `cat` with FILE as input (the echo must hash as FILE), `exit 3`
//	    (status 3 expected), then an SFTP upload of FILE to REMOTE with
//	    File.ReadFrom and a download with File.WriteTo, hashed. Prints one
//	    line per step; exits 1 on the first mismatch or error. A second
//	    upload, REMOTE.w, goes through File.Write.
//	sftppeer server PORT HOSTKEY AUTHORIZED_KEYS
//	    listens on 127.0.0.1:PORT, takes the keys in AUTHORIZED_KEYS, runs
//	    exec requests with `sh -c` and the "sftp" subsystem with pkg/sftp's
//	    server; prints "ready" once listening.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

func main() {
	if len(os.Args) == 8 && os.Args[1] == "client" {
		client(os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6], os.Args[7])
	} else if len(os.Args) == 5 && os.Args[1] == "server" {
		server(os.Args[2], os.Args[3], os.Args[4])
	} else {
		fail("usage: sftppeer client HOST:PORT USER KEY HOSTKEY.pub FILE REMOTE | server PORT HOSTKEY AUTHORIZED_KEYS")
	}
}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "sftppeer: "+format+"\n", a...)
	os.Exit(1)
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func readFile(path string) []byte {
	b, err := os.ReadFile(path)
	must(err, path)
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func client(addr, user, keyPath, hostPub, file, remote string) {
	signer, err := ssh.ParsePrivateKey(readFile(keyPath))
	must(err, keyPath)
	host, _, _, _, err := ssh.ParseAuthorizedKey(readFile(hostPub))
	must(err, hostPub)
	conn, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		// The server's key of this type is the only one accepted.
		HostKeyCallback:   ssh.FixedHostKey(host),
		HostKeyAlgorithms: []string{host.Type()},
	})
	must(err, "connect "+addr)
	defer conn.Close()
	data := readFile(file)
	want := sum(data)

	s, err := conn.NewSession()
	must(err, "session")
	s.Stdin = bytes.NewReader(data)
	echo, err := s.Output("cat")
	must(err, "exec cat")
	if got := sum(echo); got != want {
		fail("exec cat: %d bytes back, sha256 %s, sent %d, %s", len(echo), got, len(data), want)
	}
	fmt.Println("exec ok")

	s, err = conn.NewSession()
	must(err, "session")
	var exit *ssh.ExitError
	if err := s.Run("exit 3"); !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		fail("exec 'exit 3': want exit status 3, got %v", err)
	}
	fmt.Println("exit status ok")

	c, err := sftp.NewClient(conn)
	must(err, "sftp subsystem")
	defer c.Close()
	f, err := c.Create(remote)
	must(err, "sftp create "+remote)
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		fail("sftp upload %s: %v", remote, err)
	}
	must(f.Close(), "sftp close "+remote)
	// The other upload path: one File.Write of the whole buffer.
	w, err := c.Create(remote + ".w")
	must(err, "sftp create "+remote+".w")
	if _, err := w.Write(data); err != nil {
		fail("sftp write %s.w: %v", remote, err)
	}
	must(w.Close(), "sftp close "+remote+".w")
	if st, err := c.Stat(remote + ".w"); err != nil || st.Size() != int64(len(data)) {
		fail("sftp stat %s.w: %v (size %v, wrote %d)", remote, err, st, len(data))
	}
	f, err = c.Open(remote)
	must(err, "sftp open "+remote)
	var back bytes.Buffer
	if _, err := f.WriteTo(&back); err != nil {
		fail("sftp download %s: %v", remote, err)
	}
	f.Close()
	if got := sum(back.Bytes()); got != want {
		fail("sftp round trip: %d bytes back, sha256 %s, sent %d, %s", back.Len(), got, len(data), want)
	}
	fmt.Println("sftp ok")
}

func server(port, hostKeyPath, authPath string) {
	hostKey, err := ssh.ParsePrivateKey(readFile(hostKeyPath))
	must(err, hostKeyPath)
	allowed := map[string]bool{}
	rest := readFile(authPath)
	for len(bytes.TrimSpace(rest)) > 0 {
		var k ssh.PublicKey
		k, _, _, rest, err = ssh.ParseAuthorizedKey(rest)
		must(err, authPath)
		allowed[string(k.Marshal())] = true
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if allowed[string(k.Marshal())] {
				return nil, nil
			}
			return nil, errors.New("key not in " + authPath)
		},
	}
	config.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	must(err, "listen")
	fmt.Println("ready")
	for {
		nc, err := l.Accept()
		must(err, "accept")
		go serveConn(nc, config)
	}
}

func serveConn(nc net.Conn, config *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(nc, config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sftppeer: handshake:", err)
		return
	}
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			nch.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		go serveSession(ch, creqs)
	}
}

// serveSession answers env and pty requests with failure, and runs the
// first exec or sftp subsystem request.
func serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		var arg struct{ Value string }
		if (req.Type != "exec" && req.Type != "subsystem") || ssh.Unmarshal(req.Payload, &arg) != nil {
			req.Reply(false, nil)
			continue
		}
		if req.Type == "subsystem" {
			if arg.Value != "sftp" {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			srv, err := sftp.NewServer(ch)
			if err == nil {
				err = srv.Serve()
			}
			if err != nil && err != io.EOF {
				fmt.Fprintln(os.Stderr, "sftppeer: sftp server:", err)
			}
			return
		}
		req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		cmd := exec.Command("sh", "-c", arg.Value)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := 0
		if err := cmd.Run(); err != nil {
			status = 255
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			}
		}
		ch.CloseWrite()
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
		return
	}
}
