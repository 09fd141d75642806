package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TCPProxy forwards TCP connections to a server (the broker, PostgreSQL)
// until it is set down: then it closes every connection through it and
// refuses new ones. To its clients that is the server going away, while
// the server, which every test shares, is not disturbed.
type TCPProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	down   bool
}

// NewTCPProxy forwards connections made to [TCPProxy.Addr] to target
// (host:port) until the test ends.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &TCPProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.SetDown(true) })
	return p
}

// Addr is the proxy's host:port, to put in a URL in place of the
// target's.
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }

func (p *TCPProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *TCPProxy) forward(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, server)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
	_, _ = io.Copy(client, server)
	_ = client.Close()
}

// SetDown cuts every connection and refuses new ones while down.
func (p *TCPProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}
