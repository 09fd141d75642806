package runtime

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
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
		if err := CheckURL(raw); err != nil {
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

// CheckURL reports why raw is not an AMQP URL the runtime can dial, nil
// when it is ([Config.Validate] checks each of URLs with it), naming the
// part to fix: the user information, the host, the port, the vhost or a
// query parameter. The library's and net/url's own errors quote
// parts of the URL (net/url's "invalid port" error shows what follows the
// first colon, which is the password when it holds an unescaped "/"), so
// none of their text is passed on, nor any part of the URL but a port
// that parsed as a number: the caller names the URL beside the error, its
// password masked.
func CheckURL(raw string) error {
	if _, inProcess := transport.Registered(raw); inProcess {
		return nil // an in-process broker of runtime/warrentest
	}
	if strings.ContainsAny(raw, " \t\r\n") {
		return errors.New("white space in the URL: percent-encode it (%20)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return urlSyntaxError(raw)
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return fmt.Errorf("scheme %q, expected amqp or amqps", u.Scheme)
	}
	// net/url has checked that a port is digits; the client library reads
	// any number, and a port past 65535 would fail only when dialled.
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %s is out of range: expected 1 to 65535 (amqp 5672, amqps 5671), or no \":port\" for the scheme's own", p)
		}
	}
	if err := checkURLQuery(u.Query()); err != nil {
		return err
	}
	if _, err := amqp.ParseURI(raw); err != nil {
		return fmt.Errorf("not a valid AMQP URL: expected %s", urlShape)
	}
	return nil
}

// urlShape is the shape an AMQP URL takes, for messages. It is told in
// parts: an example URL with a password in it would be shown masked.
const urlShape = "amqp:// or amqps://, then user:password@, the host, :port and /vhost"

// urlSyntaxError says which part of raw, a URL net/url refused, is wrong.
// It splits raw as package secret does when it masks the password: the
// user information runs from after "scheme://" to the last "@", so the
// error blames the part whose mask the user sees.
func urlSyntaxError(raw string) error {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return fmt.Errorf("not a valid URL: expected %s", urlShape)
	}
	hostAndRest, hasUser := rest, false
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo := rest[:at]
		hostAndRest, hasUser = rest[at+1:], true
		if !validUserinfo(userinfo) {
			return errors.New("not a valid URL: the user name or password holds a character it must percent-encode, such as / ? # @ % : [ ] (RFC 3986 section 3.2.1; url.UserPassword encodes them)")
		}
	}
	authority, tail := hostAndRest, ""
	if i := strings.IndexAny(hostAndRest, "/?#"); i >= 0 {
		authority, tail = hostAndRest[:i], hostAndRest[i:]
	}
	host, port, hostOK := splitAuthority(authority)
	noHost := ""
	if host == "" {
		noHost = ", and no host before it"
	}
	switch {
	case !hostOK:
		return errors.New("not a valid URL: the host is not a host name, an IPv4 address or an IPv6 address in brackets ([::1])")
	case port != "" && strings.Trim(port, "0123456789") != "":
		advice := ""
		if !hasUser {
			// "amqp://user:secret" with the host left out reads as a
			// host "user" and a port "secret".
			advice = "; a user name and password come before the host, as user:password@"
		}
		return fmt.Errorf("not a valid URL: the port is not a number%s: expected a port from 1 to 65535 after the host's \":\" (amqp 5672, amqps 5671), or no \":port\" for the scheme's own%s", noHost, advice)
	}
	if _, err := url.Parse("amqp://h" + tail); err != nil {
		return errors.New(`not a valid URL: the vhost after the host holds a "%" that is no percent-encoding, or a control character: write "%" as %25 and "/" as %2f in it (the default vhost "/" is %2f, or nothing after the host's "/")`)
	}
	return fmt.Errorf("not a valid URL: expected %s, with / ? # @ %% : in the user name and password percent-encoded (RFC 3986 section 3.2.1; url.UserPassword encodes them)", urlShape)
}

// validUserinfo reports whether net/url reads s as the user information
// of a URL: no "/", "?" or "#" (which end it early) and nothing else it
// refuses (a bad percent-encoding, "[", a space).
func validUserinfo(s string) bool {
	if strings.ContainsAny(s, "/?#") {
		return false
	}
	_, err := url.Parse("amqp://" + s + "@h/")
	return err == nil
}

// splitAuthority splits a URL's host[:port] (no user information) into
// its host and port; ok is false when the host is malformed.
func splitAuthority(a string) (host, port string, ok bool) {
	if strings.HasPrefix(a, "[") {
		end := strings.Index(a, "]")
		if end < 0 {
			return a, "", false
		}
		host, rest := a[:end+1], a[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return host, "", false
		}
		port = strings.TrimPrefix(rest, ":")
	} else if i := strings.LastIndex(a, ":"); i >= 0 {
		host, port = a[:i], a[i+1:]
	} else {
		host = a
	}
	_, err := url.Parse("amqp://" + host + "/")
	return host, port, err == nil
}

// checkURLQuery checks the query parameters the client library reads as
// numbers, naming the one it would refuse.
func checkURLQuery(q url.Values) error {
	for _, p := range []struct {
		name, want string
		bits       int
	}{
		{"heartbeat", "whole seconds from 0 to 65535", 16},
		{"connection_timeout", "whole milliseconds", strconv.IntSize - 1},
		{"channel_max", "a number of channels from 0 to 65535", 16},
	} {
		if !q.Has(p.name) {
			continue
		}
		if _, err := strconv.ParseUint(q.Get(p.name), 10, p.bits); err != nil {
			return fmt.Errorf("query parameter %s: expected %s", p.name, p.want)
		}
	}
	return nil
}
