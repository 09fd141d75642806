package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// Conn is a self-healing connection to a RabbitMQ broker or cluster. It
// reconnects with jittered backoff after the connection drops, fails over
// between the configured addresses, declares the configured topology on
// every connect, and lets [Publisher] and [Consumer] wait for the next
// connection instead of failing. A Conn is safe for concurrent use.
type Conn struct {
	cfg   Config
	log   *slog.Logger
	stats *stats

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has exited

	mu            sync.Mutex
	sess          *session      // the live connection; nil while reconnecting
	up            chan struct{} // closed when sess is set; replaced when it is lost
	blocked       bool          // the broker blocked publishing (connection.blocked)
	blockedReason string
	last          lastError // the last connection loss or failed dial, for Health

	bounds bounds // bounded queues declared through this Conn, to explain nacks

	offsetStore offsetStores // stream consumers' offsets, opened when first needed

	// typeAsProperty is whether the RabbitMQ release the last connection
	// announced keeps a message's type as an application property in a
	// stream (keepsTypeAsProperty), kept while reconnecting: direct writes
	// read it, so it is worked out once per connection.
	typeAsProperty atomic.Bool
}

// current returns the live session, or nil while reconnecting.
func (c *Conn) current() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// session is one AMQP connection. Channels opened on it die with it.
type session struct {
	conn transport.Connection
	url  string // redacted
	idx  int    // index into Config.URLs
	lost chan struct{}
	err  error // why the connection ended; read only after lost is closed

	blockMu   sync.Mutex
	unblocked chan struct{} // closed while the broker lets the connection publish
}

// setBlocked records connection.blocked (true) and connection.unblocked.
func (s *session) setBlocked(blocked bool) {
	s.blockMu.Lock()
	defer s.blockMu.Unlock()
	open := s.unblocked != nil && !isClosed(s.unblocked)
	switch {
	case blocked && !open:
		s.unblocked = make(chan struct{})
	case !blocked && open:
		close(s.unblocked)
	}
}

// waitUnblocked waits while the broker blocks publishing on s, until it
// unblocks, s is lost (the publish then fails as a channel loss and is
// republished on the next connection) or ctx ends.
func (s *session) waitUnblocked(ctx context.Context) error {
	s.blockMu.Lock()
	ch := s.unblocked
	s.blockMu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-s.lost:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the broker to lift its resource alarm (connection blocked): %w", context.Cause(ctx))
	}
}

// handlerStarted tells a transport that watches handlers (the in-process
// broker of runtime/warrentest, which names a handler that blocks a test)
// that consumer's handler now runs on d, and returns the call that says it
// returned.
func (s *session) handlerStarted(consumer string, d amqp.Delivery) (returned func(transport.Outcome)) {
	o, ok := s.conn.(transport.Observer)
	if !ok {
		return unobserved
	}
	return observe(o, consumer, d)
}

// unobserved is the returned call of a transport that does not watch
// handlers.
func unobserved(transport.Outcome) {}

// observe is handlerStarted on a transport that watches handlers. Apart,
// because the call it returns keeps d: in handlerStarted itself that moved
// every delivery to the heap, watched or not.
func observe(o transport.Observer, consumer string, d amqp.Delivery) func(transport.Outcome) {
	o.HandlerStarted(consumer, d)
	return func(out transport.Outcome) { o.HandlerReturned(consumer, d, out) }
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Dial connects to the first answering address of cfg.URLs, declares
// cfg.Topology if set, and returns a Conn that stays connected until Close.
// A topology that needs RabbitMQ's stream protocol (stream consumers, direct
// streams) has it checked first, as [Conn.Declare] does: a broker without
// it fails Dial with a [*PluginError] before anything of the topology is
// declared.
// While no address answers it retries with jittered backoff until ctx is
// done; refused credentials and a topology that conflicts with existing
// queues fail without a retry, since retrying cannot fix them (RabbitMQ
// answers a refused login after a pause of about three seconds; ctx bounds
// that wait too). ctx bounds only the dial: the returned Conn lives until
// Close.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:   cfg,
		log:   cfg.Logger.With("component", "warren"),
		stats: newStats(),
		done:  make(chan struct{}),
		up:    make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	s, err := c.connect(ctx, 0, true)
	if err != nil {
		c.cancel()
		// The stream protocol is checked before the topology is
		// declared: a declaration refused after it answered leaves its
		// connection open.
		c.closeOffsets()
		return nil, err
	}
	c.install(s)
	go c.supervise(s)
	return c, nil
}

// Close closes the connection and stops reconnecting. Publishers and
// consumers of c fail with [ErrClosed] afterwards. Stop consumers first
// (cancel their Run) so in-flight work is settled before the connection
// goes.
func (c *Conn) Close() error {
	c.cancel()
	<-c.done
	c.closeOffsets()
	return nil
}

// session returns the live connection, waiting for a reconnect if there is
// none, up to ctx's deadline.
func (c *Conn) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		s, up := c.sess, c.up
		c.mu.Unlock()
		if s != nil {
			return s, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the broker: %w", context.Cause(ctx))
		case <-c.ctx.Done():
			return nil, fmt.Errorf("connection: %w", ErrClosed)
		}
	}
}

func (c *Conn) install(s *session) {
	c.typeAsProperty.Store(keepsTypeAsProperty(s.conn.ServerVersion()))
	c.mu.Lock()
	c.sess = s
	close(c.up)
	c.mu.Unlock()
	c.log.Info("connected to broker", "url", s.url)
}

// supervise reconnects whenever the live session is lost, until Close.
func (c *Conn) supervise(s *session) {
	defer close(c.done)
	for {
		select {
		case <-c.ctx.Done():
			_ = s.conn.Close()
			return
		case <-s.lost:
		}
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("broker connection lost; reconnecting", "url", s.url, "err", c.redact(s.err))
		next, err := c.connect(c.ctx, s.idx+1, false)
		if err != nil {
			return // closed while reconnecting
		}
		c.install(next)
		s = next
	}
}

// connect tries every address once per round, starting at start (so a
// reconnect tries the other cluster nodes before the one that just failed),
// with jittered backoff between rounds.
func (c *Conn) connect(ctx context.Context, start int, failFast bool) (*session, error) {
	n := len(c.cfg.URLs)
	var last error
	for round := 0; ; round++ {
		for i := range n {
			idx := (start + i) % n
			s, err := c.dial(ctx, idx)
			if err == nil {
				return s, nil
			}
			last = err
			c.mu.Lock()
			c.last.set(err)
			c.mu.Unlock()
			if failFast && isPermanentDialError(err) {
				return nil, err
			}
			if ctx.Err() != nil {
				break
			}
			level := slog.LevelWarn
			if isPermanentDialError(err) {
				level = slog.LevelError // retrying only helps once someone fixes it
			}
			c.log.Log(ctx, level, "broker connect failed", "url", redactURL(c.cfg.URLs[idx]), "err", c.redact(err))
		}
		if ctx.Err() != nil || !sleepCtx(ctx.Done(), backoff(round, c.cfg.ReconnectMin, c.cfg.ReconnectMax)) {
			return nil, fmt.Errorf("%w while connecting (last error: %w)", context.Cause(ctx), last)
		}
	}
}

func (c *Conn) dial(ctx context.Context, idx int) (*session, error) {
	raw := c.cfg.URLs[idx]
	s := &session{url: redactURL(raw), idx: idx, lost: make(chan struct{})}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(c.cfg.ConnectionName)
	var handshaking atomic.Value // the net.Conn being dialled, once there is one
	stopCut := context.AfterFunc(ctx, func() {
		if nc, ok := handshaking.Load().(net.Conn); ok {
			_ = nc.SetDeadline(time.Now())
		}
	})
	conn, err := transport.Dial(ctx, raw, amqp.Config{
		Heartbeat: c.cfg.Heartbeat,
		// Cloned per dial: amqp091 writes ServerName into the config, which
		// would pin every later address to the first one's host name.
		TLSClientConfig: c.cfg.TLS.Clone(),
		Properties:      props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: c.cfg.DialTimeout}
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bounds the TLS and AMQP handshakes; amqp091 clears it once open.
			// amqp091's handshake takes no context, so ctx ending cuts it
			// short through the same deadline: a refused login, which the
			// broker answers only after a pause of its own, then ends with
			// ctx rather than seconds later.
			if err := nc.SetDeadline(time.Now().Add(c.cfg.DialTimeout)); err != nil {
				_ = nc.Close()
				return nil, err
			}
			// Stored after the deadline above, so that a cut cannot be
			// undone by it; a ctx that ended before the store is seen here.
			handshaking.Store(nc)
			if err := ctx.Err(); err != nil {
				_ = nc.Close()
				return nil, err
			}
			return nc, nil
		},
	})
	if !stopCut() && err == nil {
		// ctx ended as the handshake finished: its deadline may have hit
		// the open connection, which is not worth keeping.
		_ = conn.Close()
		conn, err = nil, context.Cause(ctx)
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (the handshake did not finish: %v)", context.Cause(ctx), err)
		}
		return nil, c.redact(fmt.Errorf("dial %s: %w", s.url, err))
	}
	s.conn = conn
	closes := conn.NotifyClose(make(chan *amqp.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp.Blocking, 1))
	go c.watch(s, closes, blocks)
	if t := c.cfg.Topology; t != nil {
		if need := streamProtocolNeed(*t); need != "" {
			// Stream consumers keep their offsets, and direct writes
			// go, over the stream protocol: a broker without its plugin
			// is named now, and before anything is declared, so that a
			// start that fails on it leaves no part of the topology
			// behind.
			if _, err := c.offsetsAt(ctx, idx, need); err != nil {
				_ = conn.Close()
				return nil, fmt.Errorf("declare topology on %s: %w", s.url, err)
			}
		}
		if err := declare(conn, *t); err != nil {
			_ = conn.Close()
			return nil, c.redact(fmt.Errorf("declare topology on %s: %w", s.url, err))
		}
		c.bounds.add(*t)
	}
	return s, nil
}

// watch marks s lost the moment its connection closes, so that nobody is
// handed a dead session, and logs flow control by the broker.
func (c *Conn) watch(s *session, closes chan *amqp.Error, blocks chan amqp.Blocking) {
	for {
		select {
		case b, ok := <-blocks:
			if !ok {
				// amqp091 closes it with the connection; the close
				// notice is on its way in closes.
				blocks = nil
				continue
			}
			s.setBlocked(b.Active)
			c.mu.Lock()
			if c.sess == s || c.sess == nil {
				c.blocked, c.blockedReason = b.Active, b.Reason
			}
			c.mu.Unlock()
			if b.Active {
				c.log.Warn("broker blocked publishing (resource alarm); publishes wait", "url", s.url, "reason", b.Reason)
			} else {
				c.log.Info("broker unblocked publishing", "url", s.url)
			}
		case e, ok := <-closes:
			c.mu.Lock()
			if ok && e != nil {
				s.err = e
			} else {
				s.err = errors.New("connection closed")
			}
			if c.sess == s {
				c.sess = nil
				c.up = make(chan struct{})
				c.blocked, c.blockedReason = false, ""
				c.last.set(s.err)
			}
			close(s.lost)
			c.mu.Unlock()
			return
		}
	}
}

// isPermanentDialError reports errors that another attempt cannot fix:
// refused credentials or vhost, and a topology that conflicts with the
// broker's or needs a later release.
func isPermanentDialError(err error) bool {
	var mismatch *MismatchError
	if errors.As(err, &mismatch) {
		return true
	}
	// A release that lacks what the topology needs: a later try reaches
	// the same release.
	var old *BrokerVersionError
	if errors.As(err, &old) {
		return true
	}
	// The stream protocol's port refusing connections: its plugin is off.
	if pe := (*PluginError)(nil); errors.As(err, &pe) && pe.Exchange == "" {
		return true
	}
	// Stream consumers and no offset store: the program must pass one.
	if errors.Is(err, ErrNoOffsetStore) {
		return true
	}
	var ae *amqp.Error
	return errors.As(err, &ae) && (ae.Code == amqp.AccessRefused || ae.Code == amqp.NotAllowed)
}

// connected reports whether a live connection is in place right now.
func (c *Conn) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil
}
