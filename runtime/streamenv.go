package runtime

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/warrenbus/warren/runtime/topology"
)

// Stream consumers read their stream over AMQP, on the engine every
// consumer runs on, and keep their offset on the broker over the stream
// protocol (the rabbitmq_stream plugin), the only protocol with
// server-side offset tracking. streamEnv is a Conn's one connection of
// that protocol, opened the first time a stream consumer or Declare needs
// it, to the host of the Conn's current AMQP address at Config.StreamPort.

// DefaultStreamPort is the port of RabbitMQ's stream protocol
// (rabbitmq_stream plugin), 5551 with TLS.
const DefaultStreamPort = 5552

type streamEnv struct {
	mu  sync.Mutex
	env *stream.Environment
}

// streams returns the Conn's stream-protocol environment, opening it if
// needed. A broker whose stream port refuses the connection is reported
// as a [*PluginError] naming the plugin to enable.
func (c *Conn) streams(need string) (*stream.Environment, error) {
	idx := 0
	if s := c.current(); s != nil {
		idx = s.idx
	}
	return c.streamsAt(idx, need)
}

// streamsAt is [Conn.streams] on the broker of Config.URLs[idx], should
// the connection have to be opened.
func (c *Conn) streamsAt(idx int, need string) (*stream.Environment, error) {
	c.streamEnv.mu.Lock()
	defer c.streamEnv.mu.Unlock()
	if e := c.streamEnv.env; e != nil && !e.IsClosed() {
		return e, nil
	}
	raw := c.cfg.URLs[idx]
	opts, host, err := streamOptions(raw, c.cfg)
	if err != nil {
		return nil, err
	}
	env, err := stream.NewEnvironment(opts)
	if err != nil {
		if refused(err) {
			return nil, &PluginError{Plugin: topology.StreamPlugin, Need: need, Address: net.JoinHostPort(host, strconv.Itoa(c.cfg.StreamPort))}
		}
		return nil, fmt.Errorf("stream protocol at %s: %w", net.JoinHostPort(host, strconv.Itoa(c.cfg.StreamPort)), c.redact(err))
	}
	c.streamEnv.env = env
	return env, nil
}

// closeStreams closes the stream-protocol connection, if one was opened.
func (c *Conn) closeStreams() {
	c.streamEnv.mu.Lock()
	defer c.streamEnv.mu.Unlock()
	if c.streamEnv.env != nil {
		_ = c.streamEnv.env.Close()
		c.streamEnv.env = nil
	}
}

// streamOptions derives the stream connection from an AMQP URL: its host,
// user, password and vhost, with TLS for amqps://. The address resolver
// keeps the client on that host: a broker advertises its node's host
// name, which the client cannot always resolve.
func streamOptions(raw string, cfg Config) (*stream.EnvironmentOptions, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", errors.New("stream protocol: the AMQP URL does not parse")
	}
	host := u.Hostname()
	user, pass := "guest", "guest"
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	vhost := "/"
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if v, err := url.PathUnescape(p); err == nil {
			vhost = v
		}
	}
	o := stream.NewEnvironmentOptions().SetHost(host).SetPort(cfg.StreamPort).
		SetUser(user).SetPassword(pass).SetVHost(vhost).
		SetAddressResolver(stream.AddressResolver{Host: host, Port: cfg.StreamPort})
	if u.Scheme == "amqps" {
		o = o.IsTLS(true).SetTLSConfig(cfg.TLS)
	}
	return o, host, nil
}

func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused")
}
