package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxNameLen is the AMQP limit on exchange and queue names (a short string).
const maxNameLen = 255

// maxConsumerLen keeps "<consumer>.retry.<delay>" within maxNameLen for any
// delay FormatDelay can write.
const maxConsumerLen = maxNameLen - len(".retry.") - 24

// Build validates s, applies the defaults documented on [Spec] and
// [ConsumerSpec], and returns the complete topology. Every problem is
// reported: the error is a [*SpecError] whose problems each name the
// consumer (or exchange) and the field they concern.
//
// Order: exchanges (events, retry, dead); then per consumer in spec order
// its poison queue, work queue and delay queues; then the bindings. Queues
// come before bindings and a dead-letter target before the queue that
// dead-letters into it.
func Build(s Spec) (Topology, error) {
	ex := s.Exchanges.withDefaults()
	var all []Problem
	all = append(all, checkExchanges(ex)...)

	t := Topology{Exchanges: []Exchange{
		{Name: ex.Events, Kind: "topic", Durable: true},
		{Name: ex.Retry, Kind: "topic", Durable: true},
		{Name: ex.Dead, Kind: "topic", Durable: true},
	}}
	owner := map[string]string{} // queue name -> what declared it, to catch collisions
	for _, e := range []string{ex.Events, ex.Retry, ex.Dead} {
		owner[e] = "exchange " + e
	}
	all = append(all, buildStreams(&t, ex, s.Streams, owner)...)
	now := time.Now()
	for i, cs := range s.Consumers {
		c := cs.withDefaults()
		ps := problems{consumer: i, name: cs.Name}
		checkConsumer(&ps, c)
		checkStreamConsumer(&ps, c, s.Streams, now)
		if len(ps.list) > 0 {
			all = append(all, ps.list...)
			continue
		}
		build := buildConsumer
		if c.Ordered {
			build = buildOrdered
			t.Exchanges = append(t.Exchanges, Exchange{Name: ShardExchange(c.Name), Kind: HashExchangeKind, Durable: true, HashHeader: OrderingKeyHeader})
		}
		queues, bindings, consumer := build(ex, c)
		for _, q := range queues {
			if prev, ok := owner[q.Name]; ok {
				ps.add("", -1, "queue %q: collides with %s", q.Name, prev)
				continue
			}
			owner[q.Name] = fmt.Sprintf("the %s queue of consumer %q", q.Role, c.Name)
		}
		all = append(all, ps.list...)
		t.Queues = append(t.Queues, queues...)
		t.Bindings = append(t.Bindings, bindings...)
		consumer.Partitions = superStreamPartitions(s.Streams, consumer.Stream)
		t.Consumers = append(t.Consumers, consumer)
	}
	if s.Delays && len(all) == 0 {
		all = append(all, buildDelays(&t, ex, s.Consumers, owner)...)
	}
	all = append(all, buildResponders(&t, ex.Requests, s.Responders, owner)...)
	if len(all) > 0 {
		return Topology{}, &SpecError{Problems: all}
	}
	return t, nil
}

func buildConsumer(ex Exchanges, c ConsumerSpec) ([]Queue, []Binding, Consumer) {
	work := WorkQueue(c.Name)
	poison := PoisonQueue(c.Name)
	consumer := Consumer{
		Name: c.Name, Queue: work, PoisonQueue: poison,
		RetryExchange: ex.Retry, DeadExchange: ex.Dead,
		MaxAttempts: c.MaxAttempts, MaxDeferrals: c.MaxDeferrals, Prefetch: c.Prefetch, Concurrency: c.Concurrency,
	}
	if c.Batch != nil {
		consumer.Batch = *c.Batch
	}
	queues := []Queue{
		{Name: poison, Consumer: c.Name, Role: RolePoison, Type: c.QueueType},
		{
			Name: work, Consumer: c.Name, Role: RoleWork, Type: c.QueueType,
			DeadLetter: &DeadLetter{
				Exchange: ex.Dead, RoutingKey: c.Name,
				// A message over its delivery limit must reach poison, not vanish.
				AtLeastOnce: c.QueueType == Quorum,
			},
			DeliveryLimit:  deliveryLimit(c),
			MaxLength:      c.MaxLength,
			MaxLengthBytes: c.MaxLengthBytes,
			MaxPriority:    c.MaxPriority,
		},
	}
	bindings := []Binding{}
	if c.Stream != "" {
		// The stream carries the consumer's facts; its work queue takes
		// only what it sends itself (retries, deferrals, held facts).
		consumer.Stream, consumer.Start = c.Stream, c.Start
		consumer.Patterns = slices.Clone(c.Bindings)
	} else {
		for _, key := range c.Bindings {
			bindings = append(bindings, Binding{Exchange: ex.Events, Queue: work, Key: key})
		}
	}
	seen := map[string]bool{}
	for _, d := range c.Backoff {
		name := RetryQueue(c.Name, d)
		consumer.Tiers = append(consumer.Tiers, Tier{Delay: d, Queue: name})
		if seen[name] {
			continue
		}
		seen[name] = true
		queues = append(queues, Queue{
			Name: name, Consumer: c.Name, Role: RoleRetry, Type: Quorum, MessageTTL: d,
			// Through the default exchange straight to the work queue, so
			// no other consumer sees the retry.
			DeadLetter: &DeadLetter{Exchange: "", RoutingKey: work, AtLeastOnce: true},
		})
		bindings = append(bindings, Binding{Exchange: ex.Retry, Queue: name, Key: name})
	}
	bindings = append(bindings, Binding{Exchange: ex.Dead, Queue: poison, Key: c.Name})
	return queues, bindings, consumer
}

func deliveryLimit(c ConsumerSpec) int {
	if c.QueueType != Quorum {
		return 0
	}
	return c.DeliveryLimit
}

func checkExchanges(ex Exchanges) []Problem {
	ps := problems{consumer: -1}
	names := map[string]string{}
	for _, e := range []struct{ role, name string }{{"events", ex.Events}, {"retry", ex.Retry}, {"dead", ex.Dead}} {
		ps.name = e.role
		if err := checkName(e.name); err != nil {
			ps.add(e.role, -1, "%s exchange %q: %v", e.role, e.name, err)
		}
		if prev, ok := names[e.name]; ok {
			ps.add(e.role, -1, "%s exchange %q: same name as the %s exchange; the three must differ", e.role, e.name, prev)
		}
		names[e.name] = e.role
	}
	return ps.list
}

// checkConsumer adds to ps what is wrong with c, defaults applied.
func checkConsumer(ps *problems, c ConsumerSpec) {
	if err := checkName(c.Name); err != nil {
		ps.add("name", -1, "name: %v", err)
	} else if len(c.Name) > maxConsumerLen {
		ps.add("name", -1, "name: longer than %d bytes leaves no room for its delay queue names", maxConsumerLen)
	}
	if c.QueueType != Quorum && c.QueueType != Classic {
		ps.add("queueType", -1, "queueType %q: expected %q or %q", c.QueueType, Quorum, Classic)
	}
	if len(c.Bindings) == 0 {
		ps.add("bindings", -1, "bindings: expected at least one topic pattern")
	}
	seen := map[string]bool{}
	for i, b := range c.Bindings {
		if err := checkPattern(b); err != nil {
			ps.add("bindings", i, "binding %q: %v", b, err)
		}
		if seen[b] {
			ps.add("bindings", i, "binding %q: listed twice", b)
		}
		seen[b] = true
	}
	if c.Concurrency < 1 {
		ps.add("concurrency", -1, "concurrency %d: expected at least 1", c.Concurrency)
	}
	if c.Prefetch < c.Concurrency {
		ps.add("prefetch", -1, "prefetch %d: expected at least concurrency (%d), or handlers would sit idle", c.Prefetch, c.Concurrency)
	}
	if c.MaxAttempts < 1 {
		ps.add("maxAttempts", -1, "maxAttempts %d: expected at least 1", c.MaxAttempts)
	} else if c.MaxAttempts > 1 && len(c.Backoff) == 0 {
		ps.add("backoff", -1, "backoff: empty, but maxAttempts %d needs at least one delay", c.MaxAttempts)
	}
	if c.MaxDeferrals < 1 {
		ps.add("maxDeferrals", -1, "maxDeferrals %d: expected at least 1 (how often one fact may be deferred)", c.MaxDeferrals)
	}
	for i, d := range c.Backoff {
		if err := checkDelay(d); err != nil {
			ps.add("backoff", i, "backoff[%d]: %v", i, err)
		}
	}
	if c.DeliveryLimit < 0 {
		ps.add("deliveryLimit", -1, "deliveryLimit %d: expected 0 (default) or more", c.DeliveryLimit)
	}
	switch {
	case c.MaxPriority < 0 || c.MaxPriority > 255:
		ps.add("maxPriority", -1, "maxPriority %d: expected 1 to 255 (10 or less is plenty), or 0 for none", c.MaxPriority)
	case c.MaxPriority > 0 && c.QueueType == Quorum && c.MaxPriority != QuorumMaxPriority && c.Stream == "":
		// 4.x quorum queues know exactly two levels: a bound other than
		// theirs would promise levels the queue merges. A stream consumer
		// takes no maxPriority at all (checkStreamConsumer says so), and
		// advice on its value or queue type would only mislead.
		ps.add("maxPriority", -1, "maxPriority %d: a quorum queue has two levels on RabbitMQ 4 (priority %d and above is high), so set maxPriority %d, or queueType %q for %d levels; RabbitMQ 3 quorum queues have no priorities", c.MaxPriority, QuorumHighPriority, QuorumMaxPriority, Classic, c.MaxPriority)
	}
	checkOrdered(ps, c)
	checkBatch(ps, c)
	if c.MaxLength < 0 || c.MaxLengthBytes < 0 {
		ps.add("maxLength", -1, "maxLength: expected 0 (no bound) or more messages and bytes, got %d messages and %d bytes", c.MaxLength, c.MaxLengthBytes)
	}
}

// checkName accepts names that are safe both as queue names and as literal
// routing keys: a consumer name is also the routing key of its poison
// copies, where '*' or '#' would turn into a wildcard.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("longer than %d bytes", maxNameLen)
	case strings.HasPrefix(name, "amq."):
		return errors.New(`the "amq." prefix is reserved by RabbitMQ`)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == ':') {
			return fmt.Errorf("character %q: expected letters, digits, '.', '-', '_' or ':'", r)
		}
	}
	return nil
}

func checkPattern(p string) error {
	if p == "" {
		return errors.New("empty")
	}
	for _, w := range strings.Split(p, ".") {
		switch {
		case w == "":
			return errors.New("empty word: expected dot-separated words")
		case w == "*" || w == "#":
		case strings.ContainsAny(w, "*#"):
			return fmt.Errorf("word %q: '*' and '#' must stand alone between dots", w)
		}
	}
	return nil
}
