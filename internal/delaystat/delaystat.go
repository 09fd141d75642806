// Package delaystat reads what the delay levels of a topology hold, for
// warren status and the console: how many delayed facts wait at each level,
// how soon the next one falls due at the latest, and how many fell due with
// no consumer bound to them.
//
// The broker is asked by passive declare, which counts a queue's messages
// without touching them: nothing is read off a level, so no fact waits
// longer for being looked at. That is also why no fact's own due time is
// shown: only the levels' counts are known without taking facts off them.
package delaystat

import (
	"context"
	"errors"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/topology"
)

// Levels is what the delay levels hold, and its shape in JSON.
type Levels struct {
	Waiting int     `json:"waiting"` // in every level
	Levels  []Level `json:"levels"`  // the levels that hold something, longest first
	// NextDueWithin bounds when the next fact falls due: a fact in level k
	// has at most 2^k ms left there and less than 2^k ms in the levels
	// below, so the lowest level holding a fact bounds the soonest one.
	// Empty when nothing waits.
	NextDueWithin string   `json:"next_due_within,omitempty"`
	Unroutable    int      `json:"unroutable"` // fell due with no consumer bound
	Missing       []string `json:"missing"`    // level queues that do not exist
}

// Level is one delay level that holds facts.
type Level struct {
	Queue    string `json:"queue"`
	Hold     string `json:"hold"` // how long the level holds a fact
	Messages int    `json:"messages"`
}

// Read inspects the delay levels and the unroutable lane of t; nil when t
// has no delayed facts. A queue that does not exist is listed in Missing,
// not an error.
func Read(ctx context.Context, conn amqpmsg.Channels, t topology.Topology) (*Levels, error) {
	if !t.Delay.Enabled() {
		return nil, nil
	}
	events := topology.DefaultExchanges.Events
	if len(t.Exchanges) > 0 {
		events = t.Exchanges[0].Name
	}
	d := &Levels{Levels: []Level{}, Missing: []string{}}
	lowest := -1
	for k := t.Delay.Levels - 1; k >= 0; k-- {
		name := topology.DelayExchange(events, k)
		q, err := amqpmsg.InspectQueue(ctx, conn, name)
		if errors.Is(err, amqpmsg.ErrNoQueue) {
			d.Missing = append(d.Missing, name)
			continue
		}
		if err != nil {
			return nil, err
		}
		d.Waiting += q.Messages
		if q.Messages > 0 {
			d.Levels = append(d.Levels, Level{Queue: name, Hold: topology.FormatDelay(hold(k)), Messages: q.Messages})
			lowest = k
		}
	}
	if lowest >= 0 {
		d.NextDueWithin = roughly(2 * hold(lowest))
	}
	q, err := amqpmsg.InspectQueue(ctx, conn, t.Delay.Unroutable)
	switch {
	case errors.Is(err, amqpmsg.ErrNoQueue):
		d.Missing = append(d.Missing, t.Delay.Unroutable)
	case err != nil:
		return nil, err
	default:
		d.Unroutable = q.Messages
	}
	return d, nil
}

// roughly renders a bound for a person: to the millisecond below a
// second, to the second above.
func roughly(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return d.Round(time.Second).String()
}

// hold is how long level k holds a fact.
func hold(k int) time.Duration { return time.Duration(1<<k) * time.Millisecond }
