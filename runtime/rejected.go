package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/warrenbus/warren/runtime/topology"
)

// ErrRejected is matched (with errors.Is) by the error Publish returns when
// the broker refused a fact because a bounded work queue it routes to is
// full (maxLength with x-overflow: reject-publish): the consumer is not
// keeping up. The error is a [*RejectedError] naming the queue; it also
// matches [ErrNacked]. A nack that no bounded queue explains matches
// ErrNacked alone.
var ErrRejected = errors.New("queue is full and rejects publishes")

// RejectedError is the error for a fact refused by a full queue.
type RejectedError struct {
	Exchange   string
	RoutingKey string
	// Queues are the bounded queues the fact routes to that were full when
	// the nack arrived (or, when none could be seen full, for example a
	// bound in bytes, every bounded queue it routes to).
	Queues []string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("exchange %q, routing key %q: %s: %s; its consumer is not keeping up, publish again once it drains",
		e.Exchange, e.RoutingKey, strings.Join(e.Queues, ", "), ErrRejected)
}

// Is reports whether target is [ErrRejected] or [ErrNacked].
func (e *RejectedError) Is(target error) bool { return target == ErrRejected || target == ErrNacked }

// bounds records the bounded queues of every topology declared on a Conn
// and the bindings that route to them, so that a nack can be explained.
type bounds struct {
	mu     sync.Mutex
	queues map[string]topology.Queue
	routes []topology.Binding // bindings to bounded queues
}

func (b *bounds) add(t topology.Topology) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[string]topology.Queue{}
	}
	for _, q := range t.Queues {
		if q.Bounded() {
			b.queues[q.Name] = q
		}
	}
	// An ordered consumer's facts reach its shards through its hash
	// exchange: each pattern binding it counts as a route to every
	// bounded shard, whichever the key hashes to.
	shards := map[string][]string{} // hash exchange -> its bounded shards
	for _, c := range t.Consumers {
		for _, q := range c.Shards {
			if _, ok := b.queues[q]; ok {
				shards[c.ShardExchange] = append(shards[c.ShardExchange], q)
			}
		}
	}
	for _, bd := range t.Bindings {
		routes := []topology.Binding{bd}
		if bd.ToExchange != "" {
			routes = nil
			for _, q := range shards[bd.ToExchange] {
				routes = append(routes, topology.Binding{Exchange: bd.Exchange, Queue: q, Key: bd.Key})
			}
		}
		for _, r := range routes {
			if _, ok := b.queues[r.Queue]; ok && !containsBinding(b.routes, r) {
				b.routes = append(b.routes, r)
			}
		}
	}
}

func containsBinding(bs []topology.Binding, b topology.Binding) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// candidates returns the bounded queues a message to exchange with key
// reaches.
func (b *bounds) candidates(exchange, key string) []topology.Queue {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []topology.Queue
	seen := map[string]bool{}
	for _, bd := range b.routes {
		if bd.Exchange == exchange && !seen[bd.Queue] && topology.TopicMatch(bd.Key, key) {
			seen[bd.Queue] = true
			out = append(out, b.queues[bd.Queue])
		}
	}
	if q, ok := b.queues[key]; ok && exchange == "" && !seen[key] {
		out = append(out, q) // the default exchange routes by queue name
	}
	return out
}

// explainNack turns a nack into a [*RejectedError] when the message routes
// to a bounded queue, naming those found full; otherwise it returns nack.
func (c *Conn) explainNack(ctx context.Context, exchange, key string, nack error) error {
	qs := c.bounds.candidates(exchange, key)
	if len(qs) == 0 {
		return nack
	}
	var full, all []string
	ch, _, err := c.openChannel(ctx)
	if err == nil {
		defer ch.Close()
	}
	for _, q := range qs {
		all = append(all, q.Name)
		if err != nil || q.MaxLength == 0 {
			continue
		}
		if st, perr := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil); perr == nil && st.Messages >= q.MaxLength {
			full = append(full, q.Name)
		} else if perr != nil {
			break // the channel is closed now
		}
	}
	if len(full) == 0 {
		full = all
	}
	return &RejectedError{Exchange: exchange, RoutingKey: key, Queues: full}
}
