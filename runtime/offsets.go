package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/warrenbus/warren/runtime/topology"
)

// Stream consumers read their stream over AMQP, on the engine every
// consumer runs on, and keep their offset on the broker over the stream
// protocol (the rabbitmq_stream plugin), the only protocol with
// server-side offset tracking. That protocol's client weighs (it brings
// OpenTelemetry and compression libraries), so this package only defines
// what it needs of it, an [OffsetStore], and the package
// runtime/streamoffset provides it: a program without stream consumers
// never compiles the client.

// DefaultStreamPort is the port of RabbitMQ's stream protocol
// (rabbitmq_stream plugin), 5551 with TLS.
const DefaultStreamPort = 5552

// OffsetStore keeps stream consumers' offsets on the broker. A Conn opens
// one, through its [OffsetDialer], the first time a stream consumer or
// Declare needs it, and closes it with the Conn.
type OffsetStore interface {
	// StoreOffset stores offset as consumer's position in stream.
	StoreOffset(ctx context.Context, consumer, stream string, offset int64) error
	// QueryOffset returns consumer's stored position in stream; found is
	// false, with a nil error, when none was ever stored.
	QueryOffset(ctx context.Context, consumer, stream string) (offset int64, found bool, err error)
	// Close closes the store's connection.
	Close() error
}

// IntervalStore is an [OffsetStore] that says how often, at most, a
// stream consumer stores its offset in it while it runs, unless the
// consumer's [WithOffsetStoreInterval] says otherwise; 0 takes every move.
// Without it, [DefaultOffsetStoreInterval] applies: a store on the broker
// is a round trip and a record in the stream. runtime/warrentest's bus,
// where a store costs nothing, takes every move, so that a test reads the
// offset of every fact settled once the bus is idle.
type IntervalStore interface {
	OffsetStore
	StoreInterval() time.Duration
}

// TailReader is an [OffsetStore] that also reads a stream's tail: the
// offset of its last fact, exactly; found is false when the stream holds
// none. With it, [Conn.Figures] gives a stream consumer's lag.
// runtime/streamoffset's store is one.
type TailReader interface {
	Tail(ctx context.Context, stream string) (last int64, found bool, err error)
}

// StreamEndpoint is where a Conn's broker answers the stream protocol, and
// as whom to log in: the host, user, password and vhost of the Conn's
// current AMQP URL, at [Config.StreamPort].
type StreamEndpoint struct {
	Host     string
	Port     int
	User     string
	Password string
	VHost    string
	// TLS, when not nil, makes the connection use TLS with this
	// configuration: set for amqps:// URLs, from [Config.TLS].
	TLS *tls.Config
	// Cluster is the stream protocol's address (host:port) of every
	// broker of [Config.URLs], this one's first, when there are several:
	// the store then follows the broker to each stream's nodes, and opens
	// its connection again at another node when one is lost.
	Cluster []string
	// BrokerVersion is the broker's release as its AMQP connection
	// reported it ("3.10.8"), or "" when not known: a store may then use
	// what later releases of the stream protocol answer (a stream's
	// stats, from 3.11), which an earlier release does not answer.
	BrokerVersion string
}

// OffsetDialer opens an [OffsetStore] at an endpoint. An error wrapping
// syscall.ECONNREFUSED, or saying "connection refused", is reported as a
// [*PluginError]: nothing answers the stream protocol there, so its plugin
// is off.
type OffsetDialer func(ctx context.Context, ep StreamEndpoint) (OffsetStore, error)

// ErrNoOffsetStore is returned when a topology has stream consumers and
// no [OffsetDialer] is known: neither [Config.StreamOffsets] nor one set
// by [SetDefaultOffsetDialer].
var ErrNoOffsetStore = errors.New("stream consumers keep their offsets over RabbitMQ's stream protocol, and no offset store is set: " +
	"set runtime.Config.StreamOffsets to streamoffset.Dial, or import the package github.com/warrenbus/warren/runtime/streamoffset " +
	"(generated packages with stream consumers import it)")

var (
	defaultDialerMu sync.Mutex
	defaultDialer   OffsetDialer
)

// SetDefaultOffsetDialer sets the [OffsetDialer] of Conns whose
// [Config.StreamOffsets] is nil. The package runtime/streamoffset calls it
// when imported, and every generated package with stream consumers imports
// it, so that their users need not.
func SetDefaultOffsetDialer(d OffsetDialer) {
	defaultDialerMu.Lock()
	defer defaultDialerMu.Unlock()
	defaultDialer = d
}

func defaultOffsetDialer() OffsetDialer {
	defaultDialerMu.Lock()
	defer defaultDialerMu.Unlock()
	return defaultDialer
}

// StreamEndpoint returns where the Conn's current broker answers the stream
// protocol ([Config.StreamPort]) and as whom to log in, for tools that
// speak it beside the Conn (runtime/streamoffset's lag and replay).
func (c *Conn) StreamEndpoint() (StreamEndpoint, error) {
	idx := 0
	if s := c.current(); s != nil {
		idx = s.idx
	}
	return c.streamEndpointAt(idx)
}

// streamEndpointAt is the stream endpoint of Config.URLs[idx], with the
// broker's version when the Conn is connected to that broker.
func (c *Conn) streamEndpointAt(idx int) (StreamEndpoint, error) {
	ep, err := streamEndpointAt(idx, c.cfg)
	if s := c.current(); err == nil && s != nil && s.idx == idx {
		ep.BrokerVersion = s.conn.ServerVersion()
	}
	return ep, err
}

// offsetStores is a Conn's one offset store, opened when first needed.
type offsetStores struct {
	mu    sync.Mutex
	store OffsetStore
	idx   int // the index in Config.URLs of the broker it was opened at
}

// offsets returns the Conn's offset store, opening it if needed. need
// says what needs it, for errors.
func (c *Conn) offsets(ctx context.Context, need string) (OffsetStore, error) {
	idx := 0
	if s := c.current(); s != nil {
		idx = s.idx
	}
	return c.offsetsAt(ctx, idx, need)
}

// offsetsAt is [Conn.offsets] on the broker of Config.URLs[idx], should
// the store have to be opened. A stream port that refuses the connection
// is reported as a [*PluginError] naming the plugin to enable.
func (c *Conn) offsetsAt(ctx context.Context, idx int, need string) (OffsetStore, error) {
	c.offsetStore.mu.Lock()
	defer c.offsetStore.mu.Unlock()
	if old := c.offsetStore.store; old != nil {
		if c.offsetStore.idx == idx {
			return old, nil
		}
		// The Conn failed over to another broker: so does the store,
		// rather than wait on a lost node (the stream client retries its
		// first address for seconds before it tries another). Closing
		// can wait on that retry, so it is not waited for.
		c.offsetStore.store = nil
		go func() { _ = old.Close() }()
	}
	store, err := c.dialOffsets(ctx, idx, need)
	if err != nil {
		return nil, err
	}
	c.offsetStore.store, c.offsetStore.idx = store, idx
	return store, nil
}

// ownOffsets opens an offset store of its own at the Conn's current
// broker, which the caller closes: a consumer group's member lives on its
// store's connection, and must not end when the Conn's shared store is
// dropped after a failed call.
func (c *Conn) ownOffsets(ctx context.Context, need string) (OffsetStore, error) {
	idx := 0
	if s := c.current(); s != nil {
		idx = s.idx
	}
	return c.dialOffsets(ctx, idx, need)
}

// dialOffsets opens an offset store at Config.URLs[idx].
func (c *Conn) dialOffsets(ctx context.Context, idx int, need string) (OffsetStore, error) {
	dial := c.offsetDialer()
	if dial == nil {
		return nil, fmt.Errorf("%s: %w", need, ErrNoOffsetStore)
	}
	ep, err := c.streamEndpointAt(idx)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	store, err := dial(ctx, ep)
	if err != nil {
		if refused(err) {
			return nil, &PluginError{Plugin: topology.StreamPlugin, Need: need, Address: addr}
		}
		if strings.Contains(err.Error(), addr) {
			// runtime/streamoffset's errors name the address already.
			return nil, c.redact(err)
		}
		return nil, fmt.Errorf("stream protocol at %s: %w", addr, c.redact(err))
	}
	return store, nil
}

// offsetDialer is the Conn's [OffsetDialer]: its Config's, or the
// default; nil if neither is set.
func (c *Conn) offsetDialer() OffsetDialer {
	if c.cfg.StreamOffsets != nil {
		return c.cfg.StreamOffsets
	}
	return defaultOffsetDialer()
}

// openOffsets returns the Conn's offset store if it is open, without
// opening it.
func (c *Conn) openOffsets() OffsetStore {
	c.offsetStore.mu.Lock()
	defer c.offsetStore.mu.Unlock()
	return c.offsetStore.store
}

// dropOffsets closes store after a call of it failed, if it is still the
// Conn's: the next use opens one at the Conn's current address, which
// after a failover is another node's.
func (c *Conn) dropOffsets(store OffsetStore) {
	c.offsetStore.mu.Lock()
	defer c.offsetStore.mu.Unlock()
	if c.offsetStore.store == store {
		// Closing can wait on the client's retries of a lost node.
		go func() { _ = store.Close() }()
		c.offsetStore.store = nil
	}
}

// closeOffsets closes the offset store, if one was opened.
func (c *Conn) closeOffsets() {
	c.offsetStore.mu.Lock()
	defer c.offsetStore.mu.Unlock()
	if c.offsetStore.store != nil {
		_ = c.offsetStore.store.Close()
		c.offsetStore.store = nil
	}
}

// streamEndpointAt is the stream endpoint of cfg.URLs[idx], with every
// URL's stream address in Cluster (idx's first) when there are several.
func streamEndpointAt(idx int, cfg Config) (StreamEndpoint, error) {
	ep, err := streamEndpoint(cfg.URLs[idx], cfg.streamPort(idx), cfg)
	if err != nil || len(cfg.URLs) < 2 {
		return ep, err
	}
	for i := range cfg.URLs {
		j := (idx + i) % len(cfg.URLs)
		u, err := url.Parse(cfg.URLs[j])
		if err != nil {
			return StreamEndpoint{}, errors.New("stream protocol: an AMQP URL does not parse")
		}
		ep.Cluster = append(ep.Cluster, net.JoinHostPort(u.Hostname(), strconv.Itoa(cfg.streamPort(j))))
	}
	return ep, nil
}

// streamEndpoint derives the stream endpoint from an AMQP URL: its host,
// user, password and vhost, with TLS for amqps://, at port.
func streamEndpoint(raw string, port int, cfg Config) (StreamEndpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return StreamEndpoint{}, errors.New("stream protocol: the AMQP URL does not parse")
	}
	ep := StreamEndpoint{Host: u.Hostname(), Port: port, User: "guest", Password: "guest", VHost: "/"}
	if u.User != nil {
		ep.User = u.User.Username()
		ep.Password, _ = u.User.Password()
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if v, err := url.PathUnescape(p); err == nil {
			ep.VHost = v
		}
	}
	if u.Scheme == "amqps" {
		ep.TLS = cfg.TLS
		if ep.TLS == nil {
			ep.TLS = &tls.Config{ServerName: ep.Host}
		}
	}
	return ep, nil
}

func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused")
}

// GroupStore is an [OffsetStore] that also joins consumer groups of super
// streams, as runtime/streamoffset's does: a consumer of a super stream
// needs one.
type GroupStore interface {
	OffsetStore
	// Join joins g's group on every partition of g.SuperStream as a single
	// active consumer, until the returned member leaves.
	Join(ctx context.Context, g ConsumerGroup) (GroupMember, error)
}

// ConsumerGroup is a consumer's membership in the group of its name on a
// super stream: what the broker decides about a partition, and each fact.
type ConsumerGroup struct {
	SuperStream string
	Consumer    string
	// Activated is called when the member becomes a partition's active
	// consumer, and says where to read from.
	Activated func(partition string) StreamPosition
	// Deactivated is called when the broker hands a partition to another
	// member, which starts reading once it returns.
	Deactivated func(partition string)
	// Deliver receives each fact, in partition order per partition.
	Deliver func(StreamMessage)
	// Lost is called when the member's subscription to a partition ended
	// without it leaving (its connection dropped, the partition's node went
	// down), before it subscribes again: the broker may already have made
	// another member active on the partition. No Deliver of that
	// subscription starts after it; one under way may still be, and should
	// return soon after Lost. Each has returned before the partition's
	// next Activated.
	Lost func(partition string)
	// Retrying is called with each failed try to subscribe to a
	// partition again after a loss; the next try follows after a pause.
	Retrying func(partition string, err error)
}

// StreamPosition is where a partition's reading starts: Offset, or when
// it is below 0, Start ("first", "last", "next", or "time" with Time).
type StreamPosition struct {
	Offset int64
	Start  string
	Time   time.Time
}

// StreamMessage is a fact read from a partition over the stream protocol,
// with what AMQP 0-9-1 gave it when it was published to an exchange.
type StreamMessage struct {
	Partition   string
	Offset      int64
	Body        []byte
	Exchange    string
	RoutingKey  string
	MessageID   string
	Type        string
	ContentType string
	Timestamp   time.Time
	Headers     map[string]any
}

// GroupMember is a joined [ConsumerGroup].
type GroupMember interface {
	// Leave leaves the group: the broker hands the member's partitions to
	// the others.
	Leave() error
}

// StreamReader is an [OffsetStore] that also reads a plain stream over
// the stream protocol, as runtime/streamoffset's does. A plain stream
// consumer whose Conn's store is one reads its stream so; otherwise it
// reads it over AMQP. The broker sends a stream-protocol reader the
// stored chunks as they are, where it turns each fact into a delivery
// for an AMQP reader: measured here, that costs the broker several times
// the CPU per fact, on the cores the consumers share with it.
type StreamReader interface {
	OffsetStore
	// Read reads r.Stream until the returned reading is closed.
	Read(ctx context.Context, r StreamRead) (StreamReading, error)
}

// ErrStreamOnOtherNodes is matched by a [StreamReader]'s Read error, and a
// [StreamWriterStore]'s Writer error, when the store cannot reach the
// stream's members: it was given one node's address ([Config.URLs] names
// one node) and the stream has replicas on other nodes, where the stream
// protocol sends a reader (and a writer to the leader). The consumer then
// reads the stream over AMQP, and the publisher publishes its facts
// through the events exchange, through the node they reach, and each says
// so; give every node's URL to use the stream protocol.
var ErrStreamOnOtherNodes = errors.New("the stream has replicas on other nodes than the one the stream protocol was given")

// StreamRead is a consumer's reading of a plain stream: where each of its
// subscriptions starts, each fact, and a subscription's end that the
// consumer did not ask for.
type StreamRead struct {
	Stream   string
	Consumer string
	// Position is called before each subscription, the first and each
	// one after a loss, and says where to read from. An error fails the
	// first subscription; a later one waits and tries again.
	Position func() (StreamPosition, error)
	// Deliver receives each fact, in stream order (Partition is the
	// stream).
	Deliver func(StreamMessage)
	// Lost is called when a subscription ended without the reading being
	// closed (its connection dropped, its node went down). No Deliver of
	// it starts after; one under way may still be, and should return
	// soon after Lost. Each has returned before the next subscription's
	// Position. err says why it ended.
	Lost func(err error)
	// Retrying is called with each failed try to subscribe again after a
	// loss; the next try follows after a pause (100 ms, growing to 5 s).
	Retrying func(err error)
}

// StreamReading is an open [StreamRead].
type StreamReading interface {
	// Close ends the reading: nothing more is delivered once it returns
	// without error.
	Close() error
}
