package outbox_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// BenchmarkCommitToArrival measures how long a fact takes from the commit
// of its transaction (for "direct": from the Publish call) until a
// consumer of its queue has it, at idle (nothing else happening) and under
// load (a writer committing batches of 10 facts back to back, or for
// "direct" a second goroutine publishing back to back). Arrival comes
// after the relay's publish reached the queue, at about the time of the
// broker's confirm, and includes the delivery to the consumer; direct
// publishing pays that delivery too, so the two compare.
//
// Cases: direct (the baseline, runtime.Publisher.Publish); postgres-notify
// (database/sql through pgxdb.FromSQL, which LISTENs); pgx-notify (a pgx
// pool); postgres-poll (sqldb.FromSQL: no LISTEN, the 500ms default
// poll); sqlite-wake (Write wakes the relay in the same process).
//
//	go test -run '^$' -bench CommitToArrival -benchtime 200x ./runtime/outbox
func BenchmarkCommitToArrival(b *testing.B) {
	br := newBroker(b, true)
	arrivals := br.arrivals()
	for _, load := range []bool{false, true} {
		mode := "idle"
		if load {
			mode = "load"
		}
		b.Run("direct/"+mode, func(b *testing.B) {
			stop := background(b, load, func(ctx context.Context) error {
				_, err := br.pub.Publish(ctx, factPlaced, order{ID: "load"})
				return err
			})
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				id, err := br.pub.Publish(context.Background(), factPlaced, order{ID: "timed"})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, arrivals.wait(b, id).Sub(start))
			}
			stop()
			reportLatency(b, lat)
			br.purge()
		})
		for _, c := range []struct {
			name string
			open func(testing.TB) *store
			db   func(*store) sqldb.DB
		}{
			{"postgres-notify", newPostgresStore, func(s *store) sqldb.DB { return s.txDB }},
			{"pgx-notify", newPgxStore, func(s *store) sqldb.DB { return s.txDB }},
			{"postgres-poll", newPostgresStore, func(s *store) sqldb.DB { return sqldb.FromSQL(s.db) }},
			{"sqlite-wake", func(t testing.TB) *store { return newSQLiteStore(t) }, func(s *store) sqldb.DB { return s.txDB }},
		} {
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				s := c.open(b)
				stopRelay := runRelay(b, s.relayOn(c.db(s), br.pub, outbox.RelayConfig{}))
				time.Sleep(100 * time.Millisecond) // the relay's first rounds (and LISTEN) are under way
				stop := background(b, load, func(ctx context.Context) error {
					payloads := make([]any, 10)
					for i := range payloads {
						payloads[i] = order{ID: "load"}
					}
					s.write(factPlaced, payloads...)
					return nil
				})
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					ctx := context.Background()
					tx := s.begin(ctx)
					id, err := s.ob.Write(ctx, execer(tx), factPlaced, order{ID: "timed"})
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(ctx); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					lat = append(lat, arrivals.wait(b, id).Sub(start))
				}
				stop()
				_ = stopRelay()
				reportLatency(b, lat)
				br.purge()
			})
		}
	}
}

// background runs work in a loop until the returned stop is called; with
// on false it runs nothing.
func background(b *testing.B, on bool, work func(ctx context.Context) error) (stop func()) {
	if !on {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := work(ctx); err != nil && ctx.Err() == nil {
				b.Error(err)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

func reportLatency(b *testing.B, lat []time.Duration) {
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(0, "ns/op") // the loop's time includes waiting; the percentiles are the figures
}

// arrivalLog records when each message id reached the consumer's queue's
// reader.
type arrivalLog struct {
	mu   sync.Mutex
	at   map[string]time.Time
	cond *sync.Cond
}

func (b *broker) arrivals() *arrivalLog {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	deliveries, err := ch.Consume(b.queue, "", true, false, false, false, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	a := &arrivalLog{at: map[string]time.Time{}}
	a.cond = sync.NewCond(&a.mu)
	b.t.Cleanup(func() { _ = ch.Close() })
	go func() {
		for d := range deliveries {
			now := time.Now()
			if d.Body != nil && !bytes.Contains(d.Body, []byte(`"load"`)) {
				a.mu.Lock()
				a.at[d.MessageId] = now
				a.cond.Broadcast()
				a.mu.Unlock()
			}
		}
	}()
	return a
}

func (a *arrivalLog) wait(b *testing.B, id string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if t, ok := a.at[id]; ok {
			delete(a.at, id)
			return t
		}
		a.cond.Wait()
	}
}
