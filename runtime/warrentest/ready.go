package warrentest

import (
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
	"github.com/warrenbus/warren/internal/transport"
)

// A runner started on the bus is ready once it reads everything it reads:
// a consumer or responder consumes each of its queues, a stream consumer
// has fixed the position it reads its stream from (its "next" or "last"
// is an offset from then on) and subscribed there, a member of a super
// stream's consumer group has joined it. [Bus.Start] returns only then,
// so that a fact published after Start reaches the runner, whatever its
// start. The runtime says none of this itself; the bus sees it happen:
//
//   - a consume of one of the bus's queues on a connection the runtime
//     dialed (busConn), under the runtime's consumer tag, which is the
//     consumer's or responder's name, a dot and a random suffix;
//   - the bus's reading of a plain stream (reading.subscribe), once its
//     position is fixed and it consumes from there;
//   - a join of a consumer group (busOffsets.Join), once the member reads
//     every partition it is to read.
//
// Each is counted by the name of the consumer and what it reads, and
// Start waits until each count it waits for has grown past what it was
// before the runner started.

// readiness counts what the runners on the bus began to read.
type readiness struct {
	mu      sync.Mutex
	counts  map[readKey]int
	changed chan struct{} // closed at the next count; made when one waits for it
}

// readKey is a consumer's name and one thing it reads: a queue or stream
// by its name, a super stream's group as groupOf names it.
type readKey struct{ consumer, what string }

// groupOf is the readKey.what of a super stream's consumer group: no
// queue is named so.
func groupOf(superStream string) string { return "group of super stream " + superStream }

// began counts one start of consumer's reading of what.
func (r *readiness) began(consumer, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[readKey]int{}
	}
	r.counts[readKey{consumer, what}]++
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// snapshot returns the counts of consumer's keys now.
func (r *readiness) snapshot(consumer string, whats []string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(whats))
	for i, w := range whats {
		out[i] = r.counts[readKey{consumer, w}]
	}
	return out
}

// missing returns what of whats consumer has not begun to read since the
// counts were before; while some is, changed is closed at the next count.
func (r *readiness) missing(consumer string, whats []string, before []int) (missing []string, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range whats {
		if r.counts[readKey{consumer, w}] <= before[i] {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed = r.changed
	}
	return missing, changed
}

// awaited is what the runner started under name reads, as the topology
// declares it: nothing for a name the topology does not know (an outbox
// relay).
func (b *Bus) awaited(name string) []string {
	for _, c := range b.top.Consumers {
		if c.Name != name {
			continue
		}
		switch {
		case c.Stream != "" && len(c.Partitions) > 0:
			return []string{groupOf(c.Stream), c.Queue}
		case c.Stream != "":
			return []string{c.Stream, c.Queue}
		case c.Ordered():
			return c.Shards
		default:
			return []string{c.Queue}
		}
	}
	for _, r := range b.top.Responders {
		if r.Name == name {
			return []string{r.Queue}
		}
	}
	return nil
}

// awaitReady waits until the runner rn, started under name, began to read
// each of whats since the counts were before. It fails the test if rn
// stops first, or if that takes longer than the patience.
func (b *Bus) awaitReady(rn *runner, whats []string, before []int) {
	b.t.Helper()
	if len(whats) == 0 {
		return
	}
	patience := time.NewTimer(b.opts.patience)
	defer patience.Stop()
	for {
		missing, changed := b.ready.missing(rn.name, whats, before)
		if len(missing) == 0 {
			return
		}
		select {
		case <-changed:
		case <-rn.done:
			if missing, _ := b.ready.missing(rn.name, whats, before); len(missing) == 0 {
				return // ready, and stopped since: the test hears of it at Idle
			}
			b.forget(rn)
			b.t.Fatalf("warrentest: start %s: it stopped before it read %s: %v", rn.name, strings.Join(missing, ", "), rn.err)
		case <-patience.C:
			clock := "wall"
			if b.virtual {
				clock = "virtual"
			}
			b.t.Fatalf("warrentest: start %s: after %v of %s time it still does not read %s (is it the runner of the topology's %s, on a connection to this bus?)", rn.name, b.opts.patience, clock, strings.Join(missing, ", "), rn.name)
		}
	}
}

// forget drops a runner whose stop Start reported already.
func (b *Bus) forget(rn *runner) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, r := range b.runners {
		if r == rn {
			b.runners = append(b.runners[:i], b.runners[i+1:]...)
			return
		}
	}
}

// busConn is a connection the runtime dialed to the bus: it tells the bus
// of each consume on it. Embedding the broker's connection keeps what
// the runtime looks for on a connection (transport.Observer,
// transport.AcksAtOnce).
type busConn struct {
	*membroker.Conn
	b *Bus
}

func (c busConn) Channel() (transport.Channel, error) {
	ch, err := c.Conn.Channel()
	if err != nil {
		return nil, err
	}
	return busChannel{Channel: ch, b: c.b}, nil
}

// busChannel is a channel of a busConn.
type busChannel struct {
	transport.Channel
	b *Bus
}

// Consume counts a consume of the runtime's, by the consumer its tag
// names (consumerTag in runtime: the name, a dot, a random suffix).
func (ch busChannel) Consume(queue, tag string, autoAck, exclusive, noLocal, noWait bool, args amqp.Table) (<-chan amqp.Delivery, error) {
	ds, err := ch.Channel.Consume(queue, tag, autoAck, exclusive, noLocal, noWait, args)
	if err == nil {
		if i := strings.LastIndexByte(tag, '.'); i > 0 {
			ch.b.ready.began(tag[:i], queue)
		}
	}
	return ds, err
}
