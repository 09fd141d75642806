package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/outbox"
)

// TestRefusedFactIsRetriedAfterItsBackoffNotThePoll: a relay that polls
// once an hour tries a refused fact again when its retry time comes
// (RetryMin, then twice that, ...), not at the next poll, for an
// unscheduled and a scheduled fact alike; once a queue is bound the next
// retry publishes it.
func TestRefusedFactIsRetriedAfterItsBackoffNotThePoll(t *testing.T) {
	for _, scheduled := range []bool{false, true} {
		name := "unscheduled"
		if scheduled {
			name = "scheduled"
		}
		t.Run(name, func(t *testing.T) {
			forEachDB(t, func(t *testing.T, s *store) {
				b := newBroker(t, false)
				b.declareExchange() // every publish is unroutable: refused
				r := s.relay(b.pub, outbox.RelayConfig{PollInterval: time.Hour, RetryMin: 20 * time.Millisecond, RetryMax: 80 * time.Millisecond})
				runRelay(t, r)
				var id string
				if scheduled {
					id = s.writeVia(s.ob.In(10*time.Millisecond), factPlaced, order{ID: "o-due"})
				} else {
					id = s.write(factPlaced, order{ID: "o-now"})[0]
				}
				// 20ms, 40ms, 80ms, 80ms...: a handful of tries within a
				// second. Before the fix the second waited for the poll.
				testenv.Eventually(t, "4 refused publishes", func() bool { return r.Stats().Failed >= 4 })
				b.declare()
				got := b.receive()
				if d := got.wait(1)[0]; d.MessageId != id {
					t.Errorf("published %s; want %s", d.MessageId, id)
				}
				testenv.Eventually(t, "the row deleted", func() bool { return len(s.rows()) == 0 })
				if st := r.Stats(); st.Published != 1 || st.Unroutable < 4 {
					t.Errorf("Stats = %+v; want 1 published after at least 4 unroutable tries", st)
				}
			})
		})
	}
}

// TestScheduleErrorNamesTheOutboxOnce: the error of a write with a
// negative delay says "outbox:" once, and still matches ErrSchedule.
func TestScheduleErrorNamesTheOutboxOnce(t *testing.T) {
	s := newSQLiteStore(t)
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep
	_, err := s.ob.In(-time.Second).Write(ctx, execer(tx), factPlaced, order{ID: "o-1"})
	if !errors.Is(err, outbox.ErrSchedule) {
		t.Fatalf("negative delay: %v; want ErrSchedule", err)
	}
	if want := "outbox: write order.placed: schedule out of range: delay -1s, expected 0 or more"; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
}
