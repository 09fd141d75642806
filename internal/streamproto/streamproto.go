// Package streamproto keeps stream consumers' offsets on RabbitMQ over the
// stream protocol (the rabbitmq_stream plugin), the only protocol with
// server-side offset tracking. It is the one place that imports the stream
// client, whose dependencies (OpenTelemetry, compression libraries) only
// programs with stream consumers should compile: package runtime reaches it
// through runtime/streamoffset, never directly. It does not import runtime,
// so that runtime's own tests can use it.
package streamproto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/topology"
)

// Endpoint is where the stream protocol answers and who to log in as. Its
// fields match runtime.StreamEndpoint's, so that one converts to the other.
type Endpoint struct {
	Host     string
	Port     int
	User     string
	Password string
	VHost    string
	// TLS, when not nil, makes the connection use TLS with this
	// configuration.
	TLS *tls.Config
	// Cluster, when it names more than one node, is the stream protocol's
	// address (host:port) of every node of the broker's cluster, Host's
	// first: see [Open].
	Cluster []string
	// BrokerVersion is the broker's release ("3.10.8"), or "" when not
	// known: from 3.11 on, [Store.TailWithin] asks the broker whether a
	// stream holds anything before it waits for its last chunk. The
	// stream client sends that question whatever the release, and an
	// earlier one does not answer it (the client waits 10 s).
	BrokerVersion string
}

// Store is one stream-protocol connection that stores and queries
// offsets. A connection the broker closed is opened again at the next
// call.
type Store struct {
	opts *stream.EnvironmentOptions
	addr string
	mu   sync.Mutex
	env  *stream.Environment
	// stats: the broker answers a stream's stats (RabbitMQ 3.11 on).
	stats bool
}

// Open connects to ep. A refused connection (the plugin is off) is
// returned wrapped, so that errors.Is(err, syscall.ECONNREFUSED) or its
// message tells it apart.
//
// With one node, every connection goes to ep's Host and Port, whatever
// host name the broker advertises (which the client cannot always
// resolve). With a cluster (ep.Cluster names several nodes) the client
// goes where the broker sends it, to the node advertised for each stream
// (a consumer to one of its replicas), so the nodes' advertised host names
// must resolve; and a connection lost with its node is opened again at
// the first of the cluster's nodes that answers.
func Open(ctx context.Context, ep Endpoint) (*Store, error) {
	user, password, vhost := inURI(ep.User, ep.Password, ep.VHost)
	o := stream.NewEnvironmentOptions().SetHost(ep.Host).SetPort(ep.Port).
		SetUser(user).SetPassword(password).SetVHost(vhost).
		// The client's default socket buffers (8 KiB, which turns the
		// kernel's autotuning off) held reads of stored facts to about 80
		// a second here; the kernel's own sizing reads them at tens of
		// thousands (docs/BENCHMARKS.md, "Streams").
		SetReadBuffer(0).SetWriteBuffer(0)
	if len(ep.Cluster) > 1 {
		for _, addr := range ep.Cluster[1:] {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, fmt.Errorf("stream protocol: cluster node address %q: %w", addr, err)
			}
			o.ConnectionParameters = append(o.ConnectionParameters, &stream.Broker{
				Host: host, Port: port, User: user, Password: password, Vhost: vhost, Scheme: "rabbitmq-stream"})
		}
	} else {
		o = o.SetAddressResolver(stream.AddressResolver{Host: ep.Host, Port: ep.Port})
	}
	if ep.TLS != nil {
		o = o.IsTLS(true).SetTLSConfig(ep.TLS)
	}
	s := &Store{opts: o, addr: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), stats: topology.VersionAtLeast(ep.BrokerVersion, 3, 11)}
	if _, err := s.environment(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// inURI returns user, password and vhost as the stream client must be
// given them. The client writes them into a URI unescaped
// ("rabbitmq-stream://user:password@host:port/vhost"), parses it, takes
// user and password from the parsed URI and unescapes the parsed path once
// more for the vhost. So a password with an @ / : ? # or % (escaped, as it
// must be, in the AMQP URL) broke the URI: the connection failed, and the
// parse error printed the password. Escaped here, each value comes out of
// the client's URI as it went in.
func inURI(user, password, vhost string) (string, string, string) {
	u, p, _ := strings.Cut(url.UserPassword(user, password).String(), ":")
	return u, p, url.PathEscape(url.QueryEscape(vhost))
}

// RefusedAdvice is what a refused connection to the stream protocol's
// port most likely means, in the words every refusal is told in (this
// package's errors, and runtime.PluginError's for a topology that needs
// the stream protocol, which keeps a copy: package runtime does not
// import this one, and its tests keep the two the same): the plugin is
// off, or the port is not its port.
const RefusedAdvice = "is the stream plugin on (rabbitmq-plugins enable rabbitmq_stream, on every node), and is this its port (5552 by default)?"

// hint says what a failed connection most likely means, where the
// client's words do not: a refused port or one that speaks another
// protocol.
func hint(err error) string {
	sep := " "
	if strings.HasSuffix(err.Error(), " ") {
		sep = "" // the client ends some errors with a space
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused"):
		return sep + "(nothing listens there: " + RefusedAdvice + ")"
	case strings.Contains(err.Error(), "commandPeerProperties"):
		// The client's first command went unanswered.
		return sep + "(the port does not answer the stream protocol: is it the stream plugin's, 5552 by default, rather than AMQP's?)"
	}
	return ""
}

// environment returns the open connection, opening it if it is not.
func (s *Store) environment(ctx context.Context) (*stream.Environment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env != nil && !s.env.IsClosed() {
		return s.env, nil
	}
	type opened struct {
		env *stream.Environment
		err error
	}
	done := make(chan opened, 1)
	go func() {
		env, err := stream.NewEnvironment(s.opts)
		done <- opened{env, err}
	}()
	var env *stream.Environment
	var err error
	select {
	case o := <-done:
		env, err = o.env, o.err
	case <-ctx.Done():
		// The client takes no context: close what it opens too late.
		go func() {
			if o := <-done; o.env != nil {
				_ = o.env.Close()
			}
		}()
		err = ctx.Err()
	}
	if err != nil {
		// The client's errors can quote the URI it was given.
		return nil, fmt.Errorf("stream protocol at %s: %w%s", s.addr, secret.Error(err), hint(err))
	}
	s.env = env
	return env, nil
}

// StoreOffset stores offset as consumer's position in streamName.
func (s *Store) StoreOffset(ctx context.Context, consumer, streamName string, offset int64) error {
	env, err := s.environment(ctx)
	if err != nil {
		return err
	}
	_, err = call(ctx, func() (struct{}, error) { return struct{}{}, env.StoreOffset(consumer, streamName, offset) })
	return err
}

// QueryOffset returns consumer's stored position in streamName; found is
// false when none was ever stored.
func (s *Store) QueryOffset(ctx context.Context, consumer, streamName string) (offset int64, found bool, err error) {
	env, err := s.environment(ctx)
	if err != nil {
		return 0, false, err
	}
	off, err := call(ctx, func() (int64, error) { return env.QueryOffset(consumer, streamName) })
	switch {
	case errors.Is(err, stream.OffsetNotFoundError):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return off, true, nil
}

// DefaultTailWait bounds how long [Store.Tail] waits for the stream's last
// chunk before it takes the stream for empty.
const DefaultTailWait = 2 * time.Second

// Tail is [Store.TailWithin] with [DefaultTailWait]; with it the Store is a
// runtime.TailReader.
func (s *Store) Tail(ctx context.Context, streamName string) (last int64, found bool, err error) {
	return s.TailWithin(ctx, streamName, DefaultTailWait)
}

// TailWithin returns the offset of the last fact in streamName, exactly: it
// attaches at the stream's last chunk of facts (offset "last", which skips
// the stream's own offset-tracking records) and adds the number of entries
// of that chunk to its first offset. found is false when no chunk came
// within wait: the stream holds no fact (a reader cannot tell an empty
// tail from one that is slow to arrive, so wait bounds the question).
// A broker of 3.11 or later (Endpoint.BrokerVersion) is asked first
// whether the stream holds anything, and an empty stream is answered at
// once.
func (s *Store) TailWithin(ctx context.Context, streamName string, wait time.Duration) (last int64, found bool, err error) {
	env, err := s.environment(ctx)
	if err != nil {
		return 0, false, err
	}
	if s.stats {
		st, err := call(ctx, func() (*stream.StreamStats, error) { return env.StreamStats(streamName) })
		if err == nil {
			if _, err := st.CommittedChunkId(); err != nil {
				return 0, false, nil // no chunk committed: nothing stored
			}
		}
		// On an error, attaching below fails too, and says why as it
		// always has.
	}
	last, found, err = firstChunk(ctx, env, streamName, stream.OffsetSpecification{}.Last(), wait, func(cc stream.ConsumerContext) int64 {
		return cc.Consumer.GetOffset() + int64(cc.GetEntriesCount()) - 1
	})
	if err != nil {
		return 0, false, fmt.Errorf("attach to the tail of stream %q: %w", streamName, err)
	}
	return last, found, nil
}

// HeadWithin returns the offset of the first fact a reader of streamName
// attached now receives: from the stream's first fact the broker still
// holds, or, with since not zero, from the first chunk of facts written
// at or after since, as a consumer with that start reads (the broker
// starts a timestamp at a chunk's first fact, over AMQP 0-9-1 as here).
// found is false when no fact came within wait: the stream holds none
// (since zero), or none written at or after since.
func (s *Store) HeadWithin(ctx context.Context, streamName string, since time.Time, wait time.Duration) (first int64, found bool, err error) {
	env, err := s.environment(ctx)
	if err != nil {
		return 0, false, err
	}
	spec := stream.OffsetSpecification{}.First()
	if !since.IsZero() {
		spec = stream.OffsetSpecification{}.Timestamp(since.UnixMilli())
	}
	first, found, err = firstChunk(ctx, env, streamName, spec, wait, func(cc stream.ConsumerContext) int64 {
		return cc.Consumer.GetOffset()
	})
	if err != nil {
		return 0, false, fmt.Errorf("attach to stream %q at %s: %w", streamName, spec, err)
	}
	return first, found, nil
}

// firstChunk attaches to streamName at spec and returns what offset makes
// of the first fact delivered; found is false when none came within wait.
func firstChunk(ctx context.Context, env *stream.Environment, streamName string, spec stream.OffsetSpecification, wait time.Duration, offset func(stream.ConsumerContext) int64) (int64, bool, error) {
	first := make(chan int64, 1)
	handler := func(cc stream.ConsumerContext, _ *amqp.Message) {
		select {
		case first <- offset(cc):
		default:
		}
	}
	// One chunk and no more credit: the client then writes nothing after
	// the first chunk, which a connection closed right after cannot take.
	opts := stream.NewConsumerOptions().SetOffset(spec).
		SetInitialCredits(1).SetCreditStrategy(stream.ManualCreditStrategy)
	c, err := call(ctx, func() (*stream.Consumer, error) { return env.NewConsumer(streamName, handler, opts) })
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = c.Close() }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case n := <-first:
		return n, true, nil
	case <-timer.C:
		return 0, false, nil
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// preferAnswering puts first among the cluster's nodes (the client's
// connection parameters) one that accepts a TCP connection, for the
// client's next look for a node. The client's locator, the connection
// that finds partitions, tries the first node when it was lost and, if
// that one does not answer (it was the node lost, as often), waits 1 to 6
// s before it tries a node at random (and again if that is the lost one
// too): a consumer group's partitions on a lost node stood still for
// seconds. The client reads these parameters only when it opens its
// locator again, which for a member's own connection happens only within
// its re-subscriptions, which call this first, one at a time.
func (s *Store) preferAnswering() {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.opts.ConnectionParameters
	if len(nodes) < 2 {
		return
	}
	for i, b := range nodes {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(b.Host, b.Port), time.Second)
		if err != nil {
			continue
		}
		_ = c.Close()
		nodes[0], nodes[i] = nodes[i], nodes[0]
		return
	}
}

// Close closes the connection.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env == nil {
		return nil
	}
	err := s.env.Close()
	s.env = nil
	return err
}

// call runs f, returning early when ctx ends: the stream client's calls
// take no context. A call abandoned that way finishes in the background.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// LogTo sends the stream client's own log lines to l, for the whole
// process: the client has one logger. Until LogTo is called they go to
// slog.Default(). Programs that print for a person, such as the warren
// command, send them where their other logs go.
func LogTo(l *slog.Logger) { logs.SetLogger(clientLogger{l}) }

// The client's own logger prints with the standard log package, an
// "[error]" line on standard error among a program's structured logs.
func init() { logs.SetLogger(clientLogger{}) }

// clientLogger is the stream client's logger interface over slog: l, or
// slog.Default() when l is nil.
type clientLogger struct{ l *slog.Logger }

func (c clientLogger) logger() *slog.Logger {
	if c.l == nil {
		return slog.Default()
	}
	return c.l
}

func (c clientLogger) Info(msg string, v ...any)  { c.log(slog.LevelInfo, msg, v) }
func (c clientLogger) Debug(msg string, v ...any) { c.log(slog.LevelDebug, msg, v) }

// Warn and Error log what the client reports, but for the lines that
// report nothing lost, seen when a connection closes (every close whose
// answer comes back in time shows one of them): the client takes the
// broker's answer to its close for a close the broker asks for, and its
// reply fails on the socket it has just closed; or its close request
// finds the connection already closed by the broker. So is a reader's
// credit written on a connection that dropped: the reader reports the
// subscription's loss itself.
func (c clientLogger) Warn(msg string, v ...any) { c.log(slog.LevelWarn, msg, v) }

func (c clientLogger) Error(msg string, v ...any) { c.log(slog.LevelError, msg, v) }

func (c clientLogger) log(level slog.Level, msg string, v []any) {
	if closeNoise(msg, v) {
		level = slog.LevelDebug
	}
	ctx, l := context.Background(), c.logger()
	if l.Enabled(ctx, level) { // else not formatted: most of the client's lines are debug lines
		l.Log(ctx, level, fmt.Sprintf(msg, v...))
	}
}

// closeNoise reports whether a client log line is one of the two that
// a close brings (see Warn).
func closeNoise(msg string, v []any) bool {
	var err error
	if len(v) > 0 {
		err, _ = v[0].(error)
	}
	switch msg {
	case "Error handling command response: %s - details: %s":
		return len(v) == 2 && v[1] == "Socket write buffer closeFrameHandler" && errors.Is(err, net.ErrClosed)
	case "error during Send client close %s", "credit error:%s":
		// The second: a reader's credit written as its connection drops,
		// which the reader reports itself as the subscription's loss.
		return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
	}
	return false
}
