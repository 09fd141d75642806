// Package transport is the seam between warren's runtime and a broker: the
// AMQP 0-9-1 operations the runtime performs, as interfaces that
// amqp091-go's connection and channel satisfy, and that the in-process
// broker of runtime/warrentest implements with the same semantics.
//
// The runtime dials through [Dial]: an address whose scheme was registered
// with [Register] reaches that transport, any other reaches RabbitMQ over
// the network. So a test swaps the address a service dials, not the code
// under test.
package transport

import (
	"context"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Connection is one connection to a broker. Channels opened on it die
// with it.
type Connection interface {
	Channel() (Channel, error)
	Close() error
	// NotifyClose receives the error that closed the connection (nil for
	// a close asked for by the client), then is closed.
	NotifyClose(chan *amqp.Error) chan *amqp.Error
	// NotifyBlocked receives connection.blocked and connection.unblocked.
	NotifyBlocked(chan amqp.Blocking) chan amqp.Blocking
	// ServerVersion is the broker version announced in the handshake,
	// for example "3.10.7"; "" when the broker did not say.
	ServerVersion() string
}

// Channel is an AMQP channel, with the meaning and error codes of
// amqp091-go's *amqp.Channel: a channel error (a missing queue, an
// inequivalent declaration) closes the channel with an *amqp.Error sent
// to NotifyClose and returned by the failing call.
type Channel interface {
	Qos(prefetchCount, prefetchSize int, global bool) error
	Consume(queue, consumer string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error)
	Cancel(consumer string, noWait bool) error
	Get(queue string, autoAck bool) (msg amqp.Delivery, ok bool, err error)

	Confirm(noWait bool) error
	NotifyPublish(confirm chan amqp.Confirmation) chan amqp.Confirmation
	NotifyReturn(c chan amqp.Return) chan amqp.Return
	NotifyClose(c chan *amqp.Error) chan *amqp.Error
	GetNextPublishSeqNo() uint64
	PublishWithContext(ctx context.Context, exchange, key string, mandatory, immediate bool, msg amqp.Publishing) error

	ExchangeDeclare(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	ExchangeDeclarePassive(name, kind string, durable, autoDelete, internal, noWait bool, args amqp.Table) error
	ExchangeBind(destination, key, source string, noWait bool, args amqp.Table) error
	ExchangeUnbind(destination, key, source string, noWait bool, args amqp.Table) error
	ExchangeDelete(name string, ifUnused, noWait bool) error
	QueueDeclare(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	QueueDeclarePassive(name string, durable, autoDelete, exclusive, noWait bool, args amqp.Table) (amqp.Queue, error)
	QueueBind(name, key, exchange string, noWait bool, args amqp.Table) error
	QueueUnbind(name, key, exchange string, args amqp.Table) error
	QueueDelete(name string, ifUnused, ifEmpty, noWait bool) (int, error)
	QueuePurge(name string, noWait bool) (int, error)

	Close() error
}

// Observer is implemented by a Connection that wants to know when the
// runtime hands a delivery to a handler and when the handler returns, so
// that it can tell a handler that is still running from a delivery merely
// held. The in-process broker uses it to name a blocked handler.
type Observer interface {
	HandlerStarted(consumer string, d amqp.Delivery)
	HandlerReturned(consumer string, d amqp.Delivery, o Outcome)
}

// AcksAtOnce is implemented by a Connection on which an ack writes no
// frame (the in-process broker): the runtime sends each ack as soon as
// every delivery before it has ended, rather than gathering acks for a
// few milliseconds, which in a test's virtual time would wait for the
// clock to move (a test that moved the clock to a retry found it unacked).
type AcksAtOnce interface {
	AcksAtOnce()
}

// Outcome is what a handler call came to, before the runtime settles the
// delivery by it.
type Outcome struct {
	Err       error // what the handler returned (or its panic, as an error)
	Duplicate bool  // the idempotency guard found the fact handled before, so the handler was not called
	// Deferred: Err is a deferral (runtime.Defer) that the runtime
	// honours; a deferral it refuses (see runtime.Defer) settles as the
	// failure it then is, and Deferred is false.
	Deferred bool
}

// Dialer opens a connection to url. cfg carries what amqp091-go needs for
// a network broker; other transports may ignore it.
type Dialer func(ctx context.Context, url string, cfg amqp.Config) (Connection, error)

var (
	mu      sync.RWMutex
	dialers = map[string]Dialer{}
)

// Register routes addresses with scheme (for example "warrentest", for
// addresses "warrentest://...") to d. Registering a scheme twice replaces
// the first.
func Register(scheme string, d Dialer) {
	mu.Lock()
	defer mu.Unlock()
	dialers[scheme] = d
}

// Registered returns the dialer of url's scheme, if one was registered.
func Registered(url string) (Dialer, bool) {
	scheme, _, ok := strings.Cut(url, "://")
	if !ok {
		return nil, false
	}
	mu.RLock()
	defer mu.RUnlock()
	d, ok := dialers[scheme]
	return d, ok
}

// Dial opens a connection to url: through the transport registered for
// its scheme, or to RabbitMQ with amqp091-go.
func Dial(ctx context.Context, url string, cfg amqp.Config) (Connection, error) {
	if d, ok := Registered(url); ok {
		return d(ctx, url, cfg)
	}
	c, err := amqp.DialConfig(url, cfg)
	if err != nil {
		return nil, err
	}
	return Network{c}, nil
}

// Network is a Connection to RabbitMQ over the network.
type Network struct{ *amqp.Connection }

// Channel opens an AMQP channel.
func (n Network) Channel() (Channel, error) {
	ch, err := n.Connection.Channel()
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// ServerVersion returns the version the broker announced.
func (n Network) ServerVersion() string {
	v, _ := n.Properties["version"].(string)
	return v
}

var _ Channel = (*amqp.Channel)(nil)
