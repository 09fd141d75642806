package testenv

import (
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"
)

// DefaultStreamPort is the stream protocol's port on the machine's broker.
const DefaultStreamPort = 5552

// StreamPort returns WARREN_STREAM_PORT (or the default), the port of the
// stream protocol on the broker at [AMQPURL], once it answers. The
// protocol is RabbitMQ's rabbitmq_stream plugin, off by default: without
// it the test skips, and fails under CI=true, naming the command that
// enables it.
func StreamPort(t testing.TB) int {
	t.Helper()
	raw := AMQPURL(t)
	port, err := strconv.Atoi(env("WARREN_STREAM_PORT", strconv.Itoa(DefaultStreamPort)))
	if err != nil {
		t.Fatalf("WARREN_STREAM_PORT: expected a port number: %v", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("RabbitMQ address: %v", err)
	}
	addr := net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err == nil {
		conn.Close()
		return port
	}
	const why = "the stream protocol (plugin rabbitmq_stream: rabbitmq-plugins enable rabbitmq_stream) is not reachable at "
	if os.Getenv("CI") == "true" {
		t.Fatalf(why+"%s (CI=true, so this fails rather than skips): %v", addr, err)
	}
	t.Skipf(why+"%s: %v", addr, err)
	return 0
}
