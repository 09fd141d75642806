package runtime

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// Config configures a [Conn]. Zero fields take the defaults documented on
// each field; [Dial] validates the result.
type Config struct {
	// URLs are the broker addresses, amqp:// or amqps://. With several (the
	// nodes of one cluster) Dial uses the first that answers and, after a
	// connection loss, fails over starting with the next one.
	URLs []string
	// TLS configures amqps:// connections. Nil means the system roots, with
	// the URL's host as the server name.
	TLS *tls.Config
	// Logger receives connection, consumer and publisher events. Default
	// slog.Default(). URLs in log records and errors have their password
	// redacted.
	Logger *slog.Logger
	// Metrics receives counts and handler latencies. Default: none (the
	// Conn still keeps the counts that [Conn.Figures] reports).
	Metrics Metrics
	// Topology, when set, is declared on connect and again on every
	// reconnect, before any publisher or consumer resumes.
	Topology *topology.Topology
	// ConnectionName is shown by the broker (rabbitmqctl list_connections
	// client_properties). Default: the program's name.
	ConnectionName string
	// Heartbeat is the AMQP heartbeat interval: how fast a dead peer is
	// noticed. Default 10s.
	Heartbeat time.Duration
	// DialTimeout bounds the TCP, TLS and AMQP handshake with one address.
	// Default 10s.
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the jittered exponential backoff
	// between rounds of reconnect attempts (each wait is between half and
	// all of min*2^n, capped at max). Defaults 100ms and 1s: a broker that
	// comes back is in use again within about a second, and one that stays
	// down sees at most about two attempts a second per Conn and address.
	ReconnectMin, ReconnectMax time.Duration
	// StreamPort is the port of RabbitMQ's stream protocol on the brokers
	// of URLs, through which stream consumers keep their offsets. Default
	// DefaultStreamPort.
	StreamPort int
	// StreamPorts, when set, gives the stream protocol's port of each
	// broker of URLs, in the same order, for brokers that do not share
	// one (several nodes on one host); it overrides StreamPort.
	StreamPorts []int
	// StreamOffsets opens the store of stream consumers' offsets, needed
	// when the topology has stream consumers. Default: the one set by
	// [SetDefaultOffsetDialer], which importing the package
	// runtime/streamoffset does (generated packages with stream consumers
	// import it). It is a field, not a dependency of this package, so that
	// programs without stream consumers do not compile the stream client.
	StreamOffsets OffsetDialer
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.ConnectionName == "" {
		c.ConnectionName = filepath.Base(os.Args[0])
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.StreamPort == 0 {
		c.StreamPort = DefaultStreamPort
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = 100 * time.Millisecond
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = max(time.Second, c.ReconnectMin)
	}
}

// streamPort is the stream protocol's port of URLs[idx].
func (c *Config) streamPort(idx int) int {
	if idx < len(c.StreamPorts) && c.StreamPorts[idx] > 0 {
		return c.StreamPorts[idx]
	}
	return c.StreamPort
}

// Validate reports what is wrong with c, naming each field. URLs in the
// error are redacted.
func (c *Config) Validate() error {
	var errs []error
	if len(c.URLs) == 0 {
		errs = append(errs, errors.New("URLs: expected at least one amqp:// or amqps:// address"))
	}
	for i, raw := range c.URLs {
		if err := checkURL(raw); err != nil {
			errs = append(errs, fmt.Errorf("URLs[%d] %s: %w", i, redactURL(raw), err))
		}
	}
	if c.ReconnectMin < 0 || c.ReconnectMax < c.ReconnectMin {
		errs = append(errs, fmt.Errorf("ReconnectMin %s, ReconnectMax %s: expected 0 <= min <= max", c.ReconnectMin, c.ReconnectMax))
	}
	if len(c.StreamPorts) != 0 && len(c.StreamPorts) != len(c.URLs) {
		errs = append(errs, fmt.Errorf("StreamPorts: %d ports for %d URLs: expected one per URL, or none", len(c.StreamPorts), len(c.URLs)))
	}
	if c.DialTimeout < 0 || c.Heartbeat < 0 {
		errs = append(errs, errors.New("DialTimeout and Heartbeat: expected positive durations"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runtime config: %w", err)
	}
	return nil
}

// checkURL reports why raw is not an AMQP URL the client library can dial.
// The library's and net/url's own errors quote parts of the URL (net/url's
// "invalid port" error shows what follows the first colon, which is the
// password when it holds an unescaped "/"), so none of their text is
// passed on: the message says what to fix instead.
func checkURL(raw string) error {
	if _, inProcess := transport.Registered(raw); inProcess {
		return nil // an in-process broker of runtime/warrentest
	}
	u, err := url.Parse(raw)
	switch {
	case strings.ContainsAny(raw, " \t\r\n"):
		return errors.New("white space in the URL: percent-encode it (%20)")
	case err != nil:
		return errors.New("not a valid URL: percent-encode the characters / ? # @ % : in the user name and password (RFC 3986 section 3.2.1, url.UserPassword)")
	case u.Scheme != "amqp" && u.Scheme != "amqps":
		return fmt.Errorf("scheme %q, expected amqp or amqps", u.Scheme)
	}
	if _, err := amqp.ParseURI(raw); err != nil {
		return errors.New("not a valid AMQP URL: the port must be a number, and heartbeat, connection_timeout and channel_max must be integers")
	}
	return nil
}
