package topology

import (
	"fmt"
	"slices"
)

// DefaultRequestsExchange is the requests exchange when the spec names none.
const DefaultRequestsExchange = "app.requests"

// RoleRequests is the role of a responder's queue: requests wait there for
// one of the responder's instances.
const RoleRequests Role = "requests"

// ResponderSpec describes one responding service: the requests it answers
// and how many it works on at once. Zero values take the consumers'
// defaults ([DefaultConcurrency], [DefaultPrefetch], [DefaultQueueType]).
type ResponderSpec struct {
	Name        string   // the responder; its queue is "<Name>.requests"
	Requests    []string // the routing keys of the requests it answers; at least one
	QueueType   QueueType
	Prefetch    int // default max(DefaultPrefetch, 2*Concurrency)
	Concurrency int // default DefaultConcurrency
}

// Responder is what the runtime needs to run one responder.
type Responder struct {
	Name        string
	Queue       string   // "<Name>.requests"
	Exchange    string   // the requests exchange, a durable direct exchange
	Requests    []string // routing keys bound from Exchange to Queue, sorted
	Prefetch    int
	Concurrency int
}

// RequestsQueue returns the name of responder's queue, "<responder>.requests".
func RequestsQueue(responder string) string { return responder + ".requests" }

// Responder returns the responder with the given name.
func (t Topology) Responder(name string) (Responder, bool) {
	for _, r := range t.Responders {
		if r.Name == name {
			return r, true
		}
	}
	return Responder{}, false
}

// buildResponders adds the requests exchange (a durable direct exchange:
// a request key names exactly one queue), each responder's queue and its
// bindings to t. Nothing is added when there are no responders, so a
// directory without requests declares what it always did.
func buildResponders(t *Topology, exchange string, specs []ResponderSpec, owner map[string]string) []Problem {
	if len(specs) == 0 {
		return nil
	}
	if exchange == "" {
		exchange = DefaultRequestsExchange
	}
	ps := problems{consumer: -1, name: "requests"}
	if err := checkName(exchange); err != nil {
		ps.add("requests", -1, "requests exchange %q: %v", exchange, err)
	}
	if prev, ok := owner[exchange]; ok {
		ps.add("requests", -1, "requests exchange %q: same name as %s", exchange, prev)
	}
	answeredBy := map[string]string{}
	for _, rs := range specs {
		rs = rs.withDefaults()
		detail := func(format string, args ...any) {
			ps.add("", -1, "responder %q: "+format, append([]any{rs.Name}, args...)...)
		}
		if err := checkName(rs.Name); err != nil {
			detail("name: %v", err)
			continue
		}
		if len(rs.Requests) == 0 {
			detail("requests: expected at least one request key")
		}
		if rs.QueueType != Quorum && rs.QueueType != Classic {
			detail("queueType %q: expected %q or %q", rs.QueueType, Quorum, Classic)
		}
		if rs.Concurrency < 1 {
			detail("concurrency %d: expected at least 1", rs.Concurrency)
		}
		if rs.Prefetch < rs.Concurrency {
			detail("prefetch %d: expected at least concurrency (%d)", rs.Prefetch, rs.Concurrency)
		}
		for _, key := range rs.Requests {
			if err := checkPattern(key); err != nil || key != literalKey(key) {
				detail("request %q: expected a routing key of dotted words without '*' or '#'", key)
			}
			if prev, ok := answeredBy[key]; ok {
				detail("request %q: already answered by responder %q; a request has exactly one responder", key, prev)
			}
			answeredBy[key] = rs.Name
		}
		queue := RequestsQueue(rs.Name)
		if prev, ok := owner[queue]; ok {
			detail("queue %q: collides with %s", queue, prev)
		}
		owner[queue] = fmt.Sprintf("the requests queue of responder %q", rs.Name)
		keys := slices.Sorted(slices.Values(rs.Requests))
		t.Queues = append(t.Queues, Queue{Name: queue, Consumer: rs.Name, Role: RoleRequests, Type: rs.QueueType})
		for _, key := range keys {
			t.Bindings = append(t.Bindings, Binding{Exchange: exchange, Queue: queue, Key: key})
		}
		t.Responders = append(t.Responders, Responder{
			Name: rs.Name, Queue: queue, Exchange: exchange, Requests: keys,
			Prefetch: rs.Prefetch, Concurrency: rs.Concurrency,
		})
	}
	t.Exchanges = append(t.Exchanges, Exchange{Name: exchange, Kind: "direct", Durable: true})
	return ps.list
}

// literalKey returns key when it has no wildcard word, "" otherwise.
func literalKey(key string) string {
	for i := range len(key) {
		if key[i] == '*' || key[i] == '#' {
			return ""
		}
	}
	return key
}

func (r ResponderSpec) withDefaults() ResponderSpec {
	if r.QueueType == "" {
		r.QueueType = DefaultQueueType
	}
	if r.Concurrency == 0 {
		r.Concurrency = DefaultConcurrency
	}
	if r.Prefetch == 0 {
		r.Prefetch = max(DefaultPrefetch, 2*r.Concurrency)
	}
	return r
}
