package outbox_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/outbox"
)

// runRelay runs r.Run (a relay's, or a consumer's) in the background; stop
// cancels it and returns Run's result, waiting for it with a generous
// deadline.
func runRelay(t testing.TB, r interface{ Run(context.Context) error }) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Run did not return after its context was cancelled")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestRelaysRacingOnPostgres: two relays with their own connection pools
// drain one table of 500 facts side by side; every fact is published
// exactly once and both relays take part.
func TestRelaysRacingOnPostgres(t *testing.T) {
	s := newPostgresStore(t)
	b := newBroker(t, true)
	got := b.receive()
	var ids []string
	for range 5 {
		payloads := make([]any, 100)
		for i := range payloads {
			payloads[i] = order{ID: "o", Total: i}
		}
		ids = append(ids, s.write(factPlaced, payloads...)...)
	}
	cfg := outbox.RelayConfig{BatchSize: 10, Concurrency: 10, PollInterval: 10 * time.Millisecond}
	relays := []*outbox.Relay{s.relayOn(s.open(), b.pub, cfg), s.relayOn(s.open(), b.pub, cfg)}
	var stops []func() error
	for _, r := range relays {
		stops = append(stops, runRelay(t, r))
	}
	got.wait(len(ids))
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Errorf("Run returned %v after cancel; want nil", err)
		}
	}

	seen := map[string]int{}
	for _, d := range got.wait(len(ids)) {
		seen[d.MessageId]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("message %s was published %d times, want once", id, seen[id])
		}
	}
	if depth := b.depth(); len(seen) != len(ids) || got.count() != len(ids) || depth != 0 {
		t.Errorf("%d messages received (%d distinct ids), %d waiting; want each of the %d facts once", got.count(), len(seen), depth, len(ids))
	}
	a, c := relays[0].Stats(), relays[1].Stats()
	t.Logf("relay 1 published %d, relay 2 published %d", a.Published, c.Published)
	if a.Published+c.Published != uint64(len(ids)) || a.Published == 0 || c.Published == 0 {
		t.Errorf("relays published %d and %d; want both to take part, %d in all", a.Published, c.Published, len(ids))
	}
}

// TestRunStopsWhenCancelled: an idle Run, waiting out a long poll
// interval, returns nil as soon as its context is cancelled.
func TestRunStopsWhenCancelled(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		s.write(factPlaced, order{ID: "o-1"})
		r := s.relay(b.pub, outbox.RelayConfig{PollInterval: time.Hour})
		stop := runRelay(t, r)
		got.wait(1) // the first round is over: Run is waiting out the interval
		if err := stop(); err != nil {
			t.Errorf("Run returned %v after cancel; want nil", err)
		}
	})
}

// TestRunStopsCleanlyMidBatch: cancelling Run while a batch is being
// published loses nothing and duplicates nothing: every fact is either
// published and gone from the outbox, or still in it, untried.
func TestRunStopsCleanlyMidBatch(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		got := b.receive()
		payloads := make([]any, 120)
		for i := range payloads {
			payloads[i] = order{ID: "o", Total: i}
		}
		ids := s.write(factPlaced, payloads...)
		// One publish at a time: the first batch of 60 takes 60 confirms,
		// so a cancel after the 20th message lands in its middle.
		r := s.relay(b.pub, outbox.RelayConfig{BatchSize: 60, Concurrency: 1})
		stop := runRelay(t, r)
		got.wait(20)
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v after cancel; want nil", err)
		}

		left := map[string]bool{}
		for _, row := range s.rows() {
			left[row.ID] = true
			if row.Attempts != 0 || row.LastError.Valid {
				t.Errorf("row %s has %d attempts (%s) after a stop; an interrupted publish is not a failure", row.ID, row.Attempts, row.LastError.String)
			}
		}
		published := map[string]bool{}
		testenv.Eventually(t, "the broker to deliver what was confirmed", func() bool { return got.count() >= int(r.Stats().Published) })
		for _, d := range got.wait(0) {
			if published[d.MessageId] {
				t.Errorf("message %s was published twice", d.MessageId)
			}
			published[d.MessageId] = true
		}
		for _, id := range ids {
			switch {
			case published[id] && left[id]:
				t.Errorf("message %s was published and is still in the outbox: it would be published again", id)
			case !published[id] && !left[id]:
				t.Errorf("message %s is neither published nor in the outbox: lost", id)
			}
		}
		if len(left) == 0 || len(published) == 0 {
			t.Errorf("%d published, %d left; the stop did not land mid-way", len(published), len(left))
		}
		t.Logf("%d published before the stop, %d left", len(published), len(left))
	})
}

// TestRunDrainsBacklogWithoutWaiting: after a full batch Run claims the
// next one at once; the poll interval only paces an outbox that is empty.
func TestRunDrainsBacklogWithoutWaiting(t *testing.T) {
	s := newSQLiteStore(t)
	b := newBroker(t, true)
	got := b.receive()
	payloads := make([]any, 25)
	for i := range payloads {
		payloads[i] = order{ID: "o", Total: i}
	}
	ids := s.write(factPlaced, payloads...)
	r := s.relay(b.pub, outbox.RelayConfig{BatchSize: 10, PollInterval: time.Hour})
	stop := runRelay(t, r)
	got.wait(len(ids)) // three batches, within the first poll interval
	if err := stop(); err != nil {
		t.Errorf("Run returned %v; want nil", err)
	}
}

// TestRunLogsUnroutableFacts: Run, which returns no per-fact errors, logs a
// fact that reached no queue at error level, naming it.
func TestRunLogsUnroutableFacts(t *testing.T) {
	s := newSQLiteStore(t)
	b := newBroker(t, false)
	b.declareExchange()
	ids := s.write(factPlaced, order{ID: "o-1"})
	logs := &recorder{}
	r := s.relay(b.pub, outbox.RelayConfig{Logger: slog.New(logs), RetryMin: time.Hour})
	stop := runRelay(t, r)
	testenv.Eventually(t, "a failed round", func() bool { return r.Stats().Unroutable == 1 })
	testenv.Eventually(t, "its log record", func() bool { return len(logs.records()) > 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rec := logs.records()[0]
	attrs := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	if rec.Level != slog.LevelError || attrs["first_message_id"] != ids[0] || attrs["unroutable"] != "1" || !strings.Contains(attrs["first_err"], "fact reached no queue") {
		t.Errorf("log record %s %q %v; want an error naming message %s as unroutable", rec.Level, rec.Message, attrs, ids[0])
	}
}

// recorder keeps the records logged to it.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) records() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.recs...)
}
