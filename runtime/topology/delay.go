package topology

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Delayed facts are held by the broker, without a plugin, in a fixed chain
// of delay levels built from TTL queues (in the spirit of NServiceBus's
// RabbitMQ transport, here in milliseconds). For an events exchange E and
// DelayLevels levels k = DelayLevels-1 down to 0:
//
//   - level k is a headers exchange E.delay.<k> and a quorum queue of the
//     same name with x-message-ttl 2^k ms, which dead-letters (at least
//     once, keeping the routing key) to the next lower level's exchange,
//     or from level 0 to the delivery exchange E.delay.deliver;
//   - a delayed fact carries the delay in milliseconds as headers, one per
//     binary digit that is 1: "warren-delay-<k>", boolean true
//     ([DelayHeader]);
//   - level k's exchange binds its queue by its header, true, so
//     a fact whose digit for k is 1 waits there 2^k ms; one whose digit is
//     0 matches nothing and goes on through the exchange's alternate
//     exchange, the next lower level's, so a fact waits exactly its delay
//     in total, whatever path it takes. A headers match of one binding
//     costs the broker a fraction of what a topic match of the delay's
//     digits as words cost, which bound scheduling before;
//   - a delayed fact's routing key is "f." and the fact's own key
//     ([DelayedRoutingKey]); the delivery exchange, a topic exchange,
//     binds every work queue (and every ordered consumer's hash exchange)
//     by "f." and each of the consumer's own patterns ([DelayedPattern]),
//     so a delayed fact reaches exactly the consumers the same fact
//     published now would;
//   - a deferred fact (a handler returned runtime.Defer) travels the same
//     levels back to one consumer's work queue alone: its key is "d." and
//     the queue's name ([DeferredRoutingKey]), which the delivery exchange
//     binds to that queue alone. No consumer pattern can match a deferred
//     fact's key (every one begins with "f."), nor a deferral's a delayed
//     fact's; a deferred fact whose queue is gone goes to the unroutable
//     lane like a due fact nobody binds;
//   - a due fact that no consumer binds goes, through the delivery
//     exchange's alternate exchange, to the queue E.delay.unroutable (a
//     fanout exchange and a queue of that name): kept for a person, never
//     dropped, and never stuck in level 0, whose at-least-once
//     dead-lettering would otherwise retry an unroutable message forever.
//
// A delayed fact may be published to the top level's exchange,
// E.delay.<DelayLevels-1>, or to that of any level at or above its
// delay's highest 1 digit, since every level above passes it straight
// down; warren's publisher enters at the highest digit, saving the hops.

// DelayLevels is the number of delay levels: delays up to 2^36-1 ms (about
// 795 days), so that "in a year" and "on this date next year" both fit with
// room for leap years and calendar arithmetic; 35 levels would stop at
// 397 days. A level costs one exchange and one idle queue.
const DelayLevels = 36

// MaxDelay is the longest delay the levels hold: 2^DelayLevels - 1 ms.
const MaxDelay = time.Duration(1<<DelayLevels-1) * time.Millisecond

// RoleDelay is the role of a delay level's queue, and RoleUnroutable that of
// the queue where due facts no consumer binds wait for a person. Neither
// belongs to a consumer: they are shared by every fact of the topology.
const (
	RoleDelay      Role = "delay"
	RoleUnroutable Role = "unroutable"
)

// Delay describes the delay levels of a topology built with Spec.Delays;
// the zero Delay means the topology has none.
type Delay struct {
	Levels     int    // DelayLevels
	Exchange   string // the top level's exchange: any delayed fact may be published here
	Deliver    string // the delivery exchange, bound to every work queue by prefixed patterns
	Unroutable string // the alternate exchange and queue of due facts no consumer binds
}

// Enabled reports whether the topology has delay levels.
func (d Delay) Enabled() bool { return d.Levels > 0 }

// DelayExchange returns the name of level k's exchange (and queue) for the
// events exchange events, "<events>.delay.<k>".
func DelayExchange(events string, k int) string {
	return events + ".delay." + strconv.Itoa(k)
}

// DeliverExchange returns the name of the delivery exchange for the events
// exchange events, "<events>.delay.deliver".
func DeliverExchange(events string) string { return events + ".delay.deliver" }

// UnroutableQueue returns the name of the exchange and queue where due facts
// that no consumer binds wait, "<events>.delay.unroutable".
func UnroutableQueue(events string) string { return events + ".delay.unroutable" }

// DelayOf returns the delay levels of the events exchange events.
func DelayOf(events string) Delay {
	return Delay{
		Levels: DelayLevels, Exchange: DelayExchange(events, DelayLevels-1),
		Deliver: DeliverExchange(events), Unroutable: UnroutableQueue(events),
	}
}

// DelayHeaderPrefix begins the name of every delay digit's header: a
// delayed fact carries DelayHeaderPrefix+"<k>" for each level k it waits
// in ([DelayHeader]).
const DelayHeaderPrefix = "warren-delay-"

// DelayHeader returns the name of level k's header, "warren-delay-<k>": a
// fact that carries it, boolean true, waits 2^k ms in level k.
func DelayHeader(k int) string { return DelayHeaderPrefix + strconv.Itoa(k) }

// DelayPath returns the levels a fact delayed by d waits in, highest
// first: the binary digits of d in milliseconds that are 1. d must be a
// positive whole number of milliseconds up to MaxDelay; a fraction of a
// millisecond is rounded up, so a fact is never early. The first level is
// where the fact enters (see [DelayLevelExchange]).
func DelayPath(d time.Duration) ([]int, error) {
	if d <= 0 || d > MaxDelay {
		return nil, fmt.Errorf("delay %s: expected more than 0 and at most %s (%d delay levels of milliseconds)", d, MaxDelay, DelayLevels)
	}
	ms := uint64((d + time.Millisecond - 1) / time.Millisecond)
	path := make([]int, 0, bits.OnesCount64(ms))
	for k := DelayLevels - 1; k >= 0; k-- {
		if ms&(1<<k) != 0 {
			path = append(path, k)
		}
	}
	return path, nil
}

// SetDelayHeaders sets in h the headers that hold a fact for d in the
// delay levels, after removing any a fact carried already (a delayed fact
// that is deferred, say, must not wait its old delay again), and returns
// the level it enters at, that of the delay's highest 1 digit.
func SetDelayHeaders(h map[string]any, d time.Duration) (int, error) {
	path, err := DelayPath(d)
	if err != nil {
		return 0, err
	}
	for name := range h {
		if strings.HasPrefix(name, DelayHeaderPrefix) {
			delete(h, name)
		}
	}
	for _, k := range path {
		h[DelayHeader(k)] = true
	}
	return path[0], nil
}

// DelayLevelExchange returns the exchange of level k of the delay levels
// whose top level's exchange is top (Delay.Exchange,
// Consumer.DeferExchange); "" when top is not a top level's name.
func DelayLevelExchange(top string, k int) string {
	prefix, ok := strings.CutSuffix(top, strconv.Itoa(DelayLevels-1))
	if !ok || k < 0 || k >= DelayLevels {
		return ""
	}
	return prefix + strconv.Itoa(k)
}

// Routing keys through the delay levels begin with one of these words: a
// delayed fact's "f" (the fact's key follows), a deferred fact's "d" (its
// work queue's name follows).
const (
	delayedKeyPrefix  = "f."
	deferredKeyPrefix = "d."
)

// MaxDelayedKeyLen is the longest fact routing key that can be delayed:
// its key on the wire begins with "f.".
const MaxDelayedKeyLen = maxNameLen - len(delayedKeyPrefix)

// DelayedRoutingKey returns the routing key that carries a fact with
// routing key key through the delay levels: "f." and the key, which the
// delivery exchange's bindings of consumer patterns require
// ([DelayedPattern]); a deferred fact's key begins with "d." instead
// ([DeferredRoutingKey]). The delay itself is in the fact's headers
// ([SetDelayHeaders]).
func DelayedRoutingKey(key string) (string, error) {
	if len(key) > MaxDelayedKeyLen {
		return "", fmt.Errorf("routing key %q: longer than %d bytes cannot be delayed (a delayed fact's key begins with %q, within AMQP's 255)", key, MaxDelayedKeyLen, delayedKeyPrefix)
	}
	return delayedKeyPrefix + key, nil
}

// MaxDeferQueueLen is the longest work-queue name a deferred fact can be
// routed back to: its key begins with "d.".
const MaxDeferQueueLen = maxNameLen - len(deferredKeyPrefix)

// DeferredRoutingKey returns the routing key that carries a deferred fact
// through the delay levels and back to the work queue queue alone: "d."
// and the queue's name. The delay is in the fact's headers
// ([SetDelayHeaders]).
func DeferredRoutingKey(queue string) (string, error) {
	if len(queue) > MaxDeferQueueLen {
		return "", fmt.Errorf("queue %q: longer than %d bytes cannot take deferred facts (a deferred fact's key begins with %q, within AMQP's 255)", queue, MaxDeferQueueLen, deferredKeyPrefix)
	}
	return deferredKeyPrefix + queue, nil
}

// IsDelayLevel reports whether queue is one of the delay levels whose top
// level's exchange is top (Delay.Exchange, Consumer.DeferExchange).
func IsDelayLevel(top, queue string) bool {
	prefix, ok := strings.CutSuffix(top, strconv.Itoa(DelayLevels-1))
	if !ok {
		return false
	}
	rest, ok := strings.CutPrefix(queue, prefix)
	if !ok {
		return false
	}
	k, err := strconv.Atoi(rest)
	return err == nil && k >= 0 && k < DelayLevels && strconv.Itoa(k) == rest
}

// DeferredQueue returns the work queue a deferred fact's routing key (see
// [DeferredRoutingKey]) brings it back to, and false for a key that is no
// deferral's, such as a delayed fact's.
func DeferredQueue(key string) (string, bool) {
	q, ok := strings.CutPrefix(key, deferredKeyPrefix)
	return q, ok && q != ""
}

// DelayedPattern returns the binding pattern on the delivery exchange for
// a consumer's pattern: "f." and the pattern. The first word is spelled
// out so that a pattern such as "#" cannot match a deferred fact's key,
// whose first word is "d".
func DelayedPattern(pattern string) string { return delayedKeyPrefix + pattern }

// DeferPattern returns the binding pattern on the delivery exchange that
// brings deferred facts back to the work queue queue: "d." and the queue's
// name, which has no wildcards.
func DeferPattern(queue string) string { return deferredKeyPrefix + queue }

// buildDelays adds the delay levels, the delivery exchange and the
// unroutable lane to t, and binds every consumer's work queue (or hash
// exchange) to the delivery exchange; t's consumers are built already.
func buildDelays(t *Topology, ex Exchanges, specs []ConsumerSpec, owner map[string]string) []Problem {
	d := DelayOf(ex.Events)
	ps := problems{consumer: -1, name: "delays"}
	names := []string{d.Deliver, d.Unroutable}
	for k := 0; k < DelayLevels; k++ {
		names = append(names, DelayExchange(ex.Events, k))
	}
	for _, n := range names {
		if len(n) > maxNameLen {
			ps.add("delayedFacts", -1, "delay exchange %q: longer than %d bytes; shorten the events exchange's name", n, maxNameLen)
			return ps.list
		}
		if prev, ok := owner[n]; ok {
			ps.add("delayedFacts", -1, "delay exchange %q: collides with %s", n, prev)
		}
		owner[n] = "the delay levels"
	}
	if len(ps.list) > 0 {
		return ps.list
	}
	t.Delay = d
	t.Exchanges = append(t.Exchanges,
		Exchange{Name: d.Unroutable, Kind: "fanout", Durable: true},
		Exchange{Name: d.Deliver, Kind: "topic", Durable: true, AlternateExchange: d.Unroutable},
	)
	t.Queues = append(t.Queues, Queue{Name: d.Unroutable, Role: RoleUnroutable, Type: Quorum})
	t.Bindings = append(t.Bindings, Binding{Exchange: d.Unroutable, Queue: d.Unroutable, Key: ""})
	// Lowest level first, so that every level's dead-letter target exists
	// before the level that dead-letters into it.
	next := d.Deliver
	for k := 0; k < DelayLevels; k++ {
		name := DelayExchange(ex.Events, k)
		// What level k's binding does not take, a fact without its digit,
		// goes on to the next level through the alternate exchange.
		t.Exchanges = append(t.Exchanges, Exchange{Name: name, Kind: "headers", Durable: true, AlternateExchange: next})
		t.Queues = append(t.Queues, Queue{
			Name: name, Role: RoleDelay, Type: Quorum,
			MessageTTL: time.Duration(1<<k) * time.Millisecond,
			// The routing key is kept: the delivery exchange reads it.
			DeadLetter: &DeadLetter{Exchange: next, AtLeastOnce: true},
		})
		t.Bindings = append(t.Bindings, Binding{Exchange: name, Queue: name, Header: DelayHeader(k)})
		next = name
	}
	for ci := range t.Consumers {
		c := &t.Consumers[ci]
		i := indexOfSpec(specs, c.Name)
		if i < 0 {
			continue
		}
		for _, p := range specs[i].Bindings {
			if c.Stream != "" {
				break // a delayed fact falls due into the stream (below)
			}
			b := Binding{Exchange: d.Deliver, Queue: c.Queue, Key: DelayedPattern(p)}
			if c.Ordered() {
				b = Binding{Exchange: d.Deliver, ToExchange: c.ShardExchange, Key: DelayedPattern(p)}
			}
			t.Bindings = append(t.Bindings, b)
		}
		if c.Ordered() {
			continue // an ordered consumer defers in place
		}
		// A work queue's name is at most 224 bytes (room for its retry
		// queues' names), so "d." and it always fit a routing key.
		t.Bindings = append(t.Bindings, Binding{Exchange: d.Deliver, Queue: c.Queue, Key: DeferPattern(c.Queue)})
		c.DeferExchange = d.Exchange
	}
	// A stream keeps the delayed facts of its bindings too, once due.
	var streamBindings []Binding
	for _, b := range t.Bindings {
		if q, ok := t.Queue(b.Queue); ok && q.Role == RoleStream && b.Exchange == ex.Events {
			streamBindings = append(streamBindings, Binding{Exchange: d.Deliver, Queue: b.Queue, Key: DelayedPattern(b.Key)})
		}
	}
	t.Bindings = append(t.Bindings, streamBindings...)
	return ps.list
}

func indexOfSpec(specs []ConsumerSpec, name string) int {
	for i, s := range specs {
		if s.Name == name {
			return i
		}
	}
	return -1
}
