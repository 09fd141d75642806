package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/outbox"
)

// stepClock is a relay clock that moves on by step at every reading, as
// if each of the relay's steps took that long.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

// TestFactDueDuringARoundIsNotLeftForThePoll: a scheduled fact that falls
// due after a round's claim, while the round is still under way, is
// published by the next round at once, not after the poll interval (an
// hour here). The relay's clock moves a minute at every reading, and the
// fact is due half a minute after the first: the first round's claim
// reads the clock first and leaves it, the round's later readings (the
// prune of kept rows, the look-up of the next due time) are past it.
func TestFactDueDuringARoundIsNotLeftForThePoll(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		start := time.Now().UTC().Truncate(time.Millisecond)
		id := s.writeVia(s.ob.At(start.Add(30*time.Second)), factPlaced, order{ID: "o-during"})
		clk := &stepClock{t: start, step: time.Minute}
		runRelay(t, s.relay(b.pub, outbox.RelayConfig{PollInterval: time.Hour, Now: clk.Now}))
		if d := got.wait(1)[0]; d.MessageId != id {
			t.Errorf("published %s; want %s", d.MessageId, id)
		}
	})
}
