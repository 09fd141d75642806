package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Delayed facts are held by the broker, without a plugin, in a fixed chain
// of delay levels built from TTL queues (the scheme NServiceBus's RabbitMQ
// transport uses, here in milliseconds). For an events exchange E and
// DelayLevels levels k = DelayLevels-1 down to 0:
//
//   - level k is a topic exchange E.delay.<k> and a quorum queue of the
//     same name with x-message-ttl 2^k ms, which dead-letters (at least
//     once, keeping the routing key) to the next lower level's exchange,
//     or from level 0 to the delivery exchange E.delay.deliver;
//   - a delayed fact's routing key is its delay in milliseconds as
//     DelayLevels binary digits, most significant first, one word each
//     ("0" or "1"), followed by the fact's own routing key;
//   - level k's exchange routes a key whose digit for k is 1 into its queue,
//     where the fact waits 2^k ms, and one whose digit is 0 straight on to
//     the next lower level's exchange (an exchange-to-exchange binding), so
//     a fact waits exactly its delay in total, whatever path it takes;
//   - the delivery exchange binds every work queue (and every ordered
//     consumer's hash exchange) by the consumer's own patterns, each prefixed
//     with a "0" or "1" word and DelayLevels-1 "*" words (two bindings per
//     pattern, see [DelayedPatterns]), so a delayed fact reaches exactly the
//     consumers the same fact published now would;
//   - a deferred fact (a handler returned runtime.Defer) travels the same levels
//     back to one consumer's work queue alone: its key marks the first
//     digit word ("d0" or "d1") and ends with the queue's name instead of
//     the fact's key (see [DeferredRoutingKey]). Level DelayLevels-1 binds
//     "d1.#" and "d0.#" beside "1.#" and "0.#", the lower levels match the
//     marked word with their "*", and the delivery exchange binds each work
//     queue by "d0" and "d1", DelayLevels-1 "*" words and its own name. No
//     consumer pattern can match a deferred fact (every one begins with a
//     bare digit word), and no deferral key can match a consumer pattern;
//     a deferred fact whose queue is gone goes to the unroutable lane like
//     a due fact nobody binds;
//   - a due fact that no consumer binds goes, through the delivery
//     exchange's alternate exchange, to the queue E.delay.unroutable (a
//     fanout exchange and a queue of that name): kept for a person, never
//     dropped, and never stuck in level 0, whose at-least-once
//     dead-lettering would otherwise retry an unroutable message forever.
//
// A delayed fact may be published to the top level's exchange,
// E.delay.<DelayLevels-1>, or to the exchange of its delay's highest 1
// digit, since every level above passes it straight down (warren's
// publisher does the latter: each level passed costs a topic match of the
// whole key). A deferred copy is published to the top level, which alone
// reads its marked word.

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

// MaxDelayedKeyLen is the longest fact routing key that can be delayed: the
// delay's words take 2*DelayLevels bytes of AMQP's 255.
const MaxDelayedKeyLen = maxNameLen - 2*DelayLevels

// DelayedRoutingKey returns the routing key that carries a fact with
// routing key key through the delay levels for delay d, which must be a
// positive whole number of milliseconds up to MaxDelay (a fraction of a
// millisecond is rounded up, so a fact is never early). Its first word is
// a bare digit, which the delivery exchange's bindings of consumer patterns
// require ([DelayedPatterns]); a deferred fact's key marks that word
// instead ([DeferredRoutingKey]).
func DelayedRoutingKey(d time.Duration, key string) (string, error) {
	if d <= 0 || d > MaxDelay {
		return "", fmt.Errorf("delay %s: expected more than 0 and at most %s (%d delay levels of milliseconds)", d, MaxDelay, DelayLevels)
	}
	if len(key) > MaxDelayedKeyLen {
		return "", fmt.Errorf("routing key %q: longer than %d bytes cannot be delayed (the delay takes %d of AMQP's 255)", key, MaxDelayedKeyLen, 2*DelayLevels)
	}
	ms := uint64((d + time.Millisecond - 1) / time.Millisecond)
	var b strings.Builder
	b.Grow(2*DelayLevels + len(key))
	for k := DelayLevels - 1; k >= 0; k-- {
		if ms&(1<<k) != 0 {
			b.WriteString("1.")
		} else {
			b.WriteString("0.")
		}
	}
	b.WriteString(key)
	return b.String(), nil
}

// MaxDeferQueueLen is the longest work-queue name a deferred fact can be
// routed back to: the delay's words, the first marked ("d0" or "d1"), take
// 2*DelayLevels+1 bytes of AMQP's 255.
const MaxDeferQueueLen = maxNameLen - 2*DelayLevels - 1

// DeferredRoutingKey returns the routing key that carries a deferred fact
// through the delay levels for delay d and back to the work queue queue
// alone: the delay in milliseconds as DelayLevels binary digits, most
// significant first, one word each, the first marked with a "d" ("d0" or
// "d1"), then the queue's name. d must be a positive whole number of
// milliseconds up to MaxDelay (a fraction is rounded up).
func DeferredRoutingKey(d time.Duration, queue string) (string, error) {
	if len(queue) > MaxDeferQueueLen {
		return "", fmt.Errorf("queue %q: longer than %d bytes cannot take deferred facts (the delay takes %d of AMQP's 255)", queue, MaxDeferQueueLen, 2*DelayLevels+1)
	}
	key, err := DelayedRoutingKey(d, queue)
	if err != nil {
		return "", err
	}
	return "d" + key, nil
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
	if !strings.HasPrefix(key, "d0.") && !strings.HasPrefix(key, "d1.") {
		return "", false
	}
	rest := key[len("d0."):]
	for range DelayLevels - 1 {
		word, tail, ok := strings.Cut(rest, ".")
		if !ok || word != "0" && word != "1" {
			return "", false
		}
		rest = tail
	}
	return rest, rest != ""
}

// DelayedPatterns returns the binding patterns on the delivery exchange for
// a consumer's pattern: a bare digit word ("0", then "1"), DelayLevels-1 "*"
// words, then the pattern. The first word is spelled out rather than "*" so
// that a pattern such as "#" cannot match a deferred fact's key, whose first
// word is "d0" or "d1".
func DelayedPatterns(pattern string) [2]string {
	rest := strings.Repeat("*.", DelayLevels-1) + pattern
	return [2]string{"0." + rest, "1." + rest}
}

// DeferPatterns returns the binding patterns on the delivery exchange that
// bring deferred facts back to the work queue queue: "d0" and "d1",
// DelayLevels-1 "*" words, then the queue's name, which has no wildcards.
func DeferPatterns(queue string) [2]string {
	rest := strings.Repeat("*.", DelayLevels-1) + queue
	return [2]string{"d0." + rest, "d1." + rest}
}

// RetiredBindings returns the bindings that earlier releases declared for
// t and this one does not, for [Topology] declarations to remove: on the
// delivery exchange, each consumer pattern behind DelayLevels "*" words.
// Such a binding matches a deferred fact's key (a pattern "#" matches any
// key), so left in place it would hand one consumer's deferred facts to
// another; its successors are the two of [DelayedPatterns]. Removing a
// binding that does not exist is no error.
func (t Topology) RetiredBindings() []Binding {
	if !t.Delay.Enabled() {
		return nil
	}
	var out []Binding
	for _, b := range t.Bindings {
		if b.Exchange != t.Delay.Deliver || !strings.HasPrefix(b.Key, "0.") {
			continue
		}
		b.Key = "*." + b.Key[len("0."):]
		out = append(out, b)
	}
	return out
}

// levelPattern is level k's binding key for the digit bit: the words of
// the higher levels, any; k's word, bit; the rest, anything.
func levelPattern(k int, bit string) string {
	return strings.Repeat("*.", DelayLevels-1-k) + bit + ".#"
}

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
		t.Exchanges = append(t.Exchanges, Exchange{Name: name, Kind: "topic", Durable: true})
		t.Queues = append(t.Queues, Queue{
			Name: name, Role: RoleDelay, Type: Quorum,
			MessageTTL: time.Duration(1<<k) * time.Millisecond,
			// The routing key is kept: the next level reads its own digit.
			DeadLetter: &DeadLetter{Exchange: next, AtLeastOnce: true},
		})
		t.Bindings = append(t.Bindings,
			Binding{Exchange: name, Queue: name, Key: levelPattern(k, "1")},
			Binding{Exchange: name, ToExchange: next, Key: levelPattern(k, "0")},
		)
		if k == DelayLevels-1 {
			// Deferred facts: the top level reads the marked digit word.
			t.Bindings = append(t.Bindings,
				Binding{Exchange: name, Queue: name, Key: "d1.#"},
				Binding{Exchange: name, ToExchange: next, Key: "d0.#"},
			)
		}
		next = name
	}
	for ci := range t.Consumers {
		c := &t.Consumers[ci]
		i := indexOfSpec(specs, c.Name)
		if i < 0 {
			continue
		}
		for _, p := range specs[i].Bindings {
			for _, key := range DelayedPatterns(p) {
				b := Binding{Exchange: d.Deliver, Queue: c.Queue, Key: key}
				if c.Ordered() {
					b = Binding{Exchange: d.Deliver, ToExchange: c.ShardExchange, Key: key}
				}
				t.Bindings = append(t.Bindings, b)
			}
		}
		if c.Ordered() {
			continue // an ordered consumer defers in place
		}
		if len(c.Queue) > MaxDeferQueueLen {
			ps.consumer, ps.name = i, c.Name
			ps.add("name", -1, "name: longer than %d bytes leaves no room in a deferred fact's routing key (the delay levels take %d of AMQP's 255)", MaxDeferQueueLen, 2*DelayLevels+1)
			continue
		}
		for _, key := range DeferPatterns(c.Queue) {
			t.Bindings = append(t.Bindings, Binding{Exchange: d.Deliver, Queue: c.Queue, Key: key})
		}
		c.DeferExchange = d.Exchange
	}
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
