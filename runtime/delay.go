package runtime

import (
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// HeaderDueAt carries when a delayed fact was due (RFC 3339 in UTC with
// milliseconds), set by [Publisher.In] and [Publisher.At];
// [Delivery.DueAt] reads it, so how late a fact arrived is measurable.
const HeaderDueAt = "x-due-at"

// dueAtLayout writes HeaderDueAt: RFC 3339 with exactly three fraction
// digits, which [time.RFC3339Nano] would drop when they are zero.
const dueAtLayout = "2006-01-02T15:04:05.000Z07:00"

// ErrDelay matches the error of a publish whose delay the delay levels
// cannot hold: negative, or beyond [topology.MaxDelay].
var ErrDelay = errors.New("delay out of range")

// schedule is when the facts of a [Publisher] view are due; the zero
// schedule publishes now.
type schedule struct {
	set   bool
	delay time.Duration // In
	at    time.Time     // At, when delay is unused
	isAt  bool
}

// In returns a view of p whose publishes are due after d: each fact is
// validated now, then held by the broker in the delay levels of p's events
// exchange (a topology built with topology.Spec.Delays; see
// docs/DESIGN.md) and routed by its own routing key when due, to exactly
// the consumers it would reach if published then. The view shares p's
// channel and options; p itself still publishes now.
//
// d is rounded up to a whole millisecond. d == 0 publishes now; a negative
// d, or one beyond [topology.MaxDelay] (about 795 days), is an error
// matching [ErrDelay], and nothing is sent. Every publish of the view
// carries [HeaderDueAt].
//
// The broker confirms a delayed fact once the delay levels hold it, which
// says nothing about its consumers: ErrUnroutable is reported only when the
// delay levels are not declared. A fact that no queue binds when it is due
// is not dropped: it waits in the queue topology.UnroutableQueue of the
// events exchange. A delayed fact cannot be cancelled.
func (p *Publisher) In(d time.Duration) *Publisher {
	return &Publisher{publisher: p.publisher, due: schedule{set: true, delay: d}}
}

// At returns a view of p whose publishes are due at t: [Publisher.In]
// with the time left until t when each fact is published. A t that has
// passed publishes now (with t as its [HeaderDueAt]), so a schedule
// computed a moment too late is not refused; a t beyond
// [topology.MaxDelay] from now is an error matching [ErrDelay].
func (p *Publisher) At(t time.Time) *Publisher {
	return &Publisher{publisher: p.publisher, due: schedule{set: true, at: t, isAt: true}}
}

// destination is where one publish goes: the exchange and the routing key
// on the wire, and the fact's own routing key.
type destination struct {
	exchange string
	key      string // on the wire: the fact's key, or, delayed, "f." and the fact's key
	fact     string // the fact's routing key
	stream   string // the stream the fact is written into directly; "" through exchange
}

// destination returns where msg goes now and adds the delay's headers to
// it. A delayed fact's key is topology.DelayedRoutingKey's, whose "f."
// the consumers' bindings on the delivery exchange require; a handler's
// deferral goes another way (Consumer.deferFact, with
// topology.DeferredRoutingKey), back to one work queue.
func (p *Publisher) destination(f Fact, msg *amqp.Publishing) (destination, error) {
	dst := destination{exchange: p.exchange, key: f.RoutingKey, fact: f.RoutingKey}
	if !p.due.set {
		if f.dueAt != nil {
			msg.Headers[HeaderDueAt] = f.dueAt.UTC().Format(dueAtLayout)
		}
		dst.stream = p.directStream(f.RoutingKey)
		return dst, nil
	}
	now := time.Now()
	due, d := p.due.at, p.due.delay
	if p.due.isAt {
		d = due.Sub(now)
		if d < 0 {
			d = 0
		}
	} else {
		due = now.Add(d)
	}
	if d < 0 || d > topology.MaxDelay {
		return dst, fmt.Errorf("%w: %s, expected 0 to %s (publish later with In or At)", ErrDelay, d, maxDelayText())
	}
	msg.Headers[HeaderDueAt] = due.UTC().Format(dueAtLayout)
	if d == 0 {
		dst.stream = p.directStream(f.RoutingKey)
		return dst, nil
	}
	key, err := topology.DelayedRoutingKey(f.RoutingKey)
	if err != nil {
		return dst, err
	}
	// Every level above the delay's highest digit would pass the fact
	// straight down; entering there, it takes the same path, waits the
	// same time and arrives the same.
	entry, err := topology.SetDelayHeaders(msg.Headers, d)
	if err != nil {
		return dst, err
	}
	// The consumer reads the fact's key and exchange from these, as it
	// does for a retry: the delivery itself carries the "f." key.
	msg.Headers[HeaderOriginalRoutingKey] = f.RoutingKey
	msg.Headers[HeaderOriginalExchange] = p.exchange
	dst.exchange = topology.DelayExchange(p.exchange, entry)
	dst.key = key
	return dst, nil
}

// WithDueAt returns f with the time its fact was due, for one publish that
// happens now: an outbox relay publishing a scheduled row passes the row's
// due time, which the fact then carries as [HeaderDueAt] so that its
// consumers can tell how late it came. A view made by [Publisher.In] or
// [Publisher.At] sets the header from its own schedule instead.
func (f Fact) WithDueAt(t time.Time) Fact {
	f.dueAt = &t
	return f
}

// dueAt reads [HeaderDueAt] from h; the zero time when it is absent or
// unreadable.
func dueAt(h amqp.Table) time.Time {
	s, _ := h[HeaderDueAt].(string)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// maxDelayText is the delay levels' reach as an error says it: exact, and
// in days, which a person reads.
func maxDelayText() string {
	return fmt.Sprintf("%s (about %d days)", topology.MaxDelay, int(topology.MaxDelay.Hours()/24))
}
