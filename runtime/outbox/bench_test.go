package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/outbox"
)

// The benchmarks compare the outbox with publishing directly, in the same
// run, to the same quorum queue on the real broker:
//
//   - BenchmarkRelay: b.N facts are written to the outbox untimed; one
//     relay is timed draining them with RelayOnce ("relay": the defaults,
//     batches of 500 with 256 publishes in flight; "relay-batch100":
//     batches of 100 with 64 in flight). Beside it, "direct" publishes b.N
//     facts with Publisher.Publish from 256 goroutines sharing one
//     publisher, as many in flight as the relay has.
//   - BenchmarkWrite: what Write adds to a business transaction: a
//     transaction inserting one order row, with and without the outbox row.
//
//	go test -run '^$' -bench . ./runtime/outbox

const benchInFlight = outbox.DefaultConcurrency

func BenchmarkRelay(b *testing.B) {
	br := newBroker(b, true)
	b.Run("direct", func(b *testing.B) {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, benchInFlight)
		b.ResetTimer()
		for range benchInFlight {
			wg.Go(func() {
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					if _, err := br.pub.Publish(context.Background(), factPlaced, order{ID: "o", Total: int(i)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		reportRate(b)
		br.purge()
	})
	for _, c := range []struct {
		name string
		open func(testing.TB) *store
	}{
		{"postgres", newPostgresStore},
		{"sqlite", func(t testing.TB) *store { return newSQLiteStore(t) }},
	} {
		for _, v := range []struct {
			name string
			cfg  outbox.RelayConfig
		}{
			{"relay", outbox.RelayConfig{}},
			{"relay-batch100", outbox.RelayConfig{BatchSize: 100, Concurrency: 64}},
		} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				s := c.open(b)
				s.writeN(b.N)
				r := s.relay(br.pub, v.cfg)
				b.ResetTimer()
				for done := 0; done < b.N; {
					n, err := r.RelayOnce(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					done += n
				}
				b.StopTimer()
				reportRate(b)
				br.purge()
			})
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(testing.TB) *store
	}{
		{"postgres", newPostgresStore},
		{"sqlite", func(t testing.TB) *store { return newSQLiteStore(t) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := c.open(b)
			orders := testenv.TableName("orders")
			if _, err := s.db.Exec(`CREATE TABLE "` + orders + `" (id TEXT PRIMARY KEY, total INTEGER)`); err != nil {
				b.Fatal(err)
			}
			testenv.DropTable(b, s.db, orders)
			insert := fmt.Sprintf(`INSERT INTO "%s" (id, total) VALUES (%s, %s)`, orders, s.placeholder(1), s.placeholder(2))
			i := 0
			place := func(b *testing.B, withFact bool) {
				i++
				ctx := context.Background()
				tx := s.begin(ctx)
				defer tx.Rollback(ctx) //nolint:errcheck
				id := fmt.Sprint("o-", i)
				if _, err := tx.ExecContext(ctx, insert, id, i); err != nil {
					b.Fatal(err)
				}
				if withFact {
					if _, err := s.ob.Write(ctx, execer(tx), factPlaced, order{ID: id, Total: i}); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("plain-tx", func(b *testing.B) {
				for b.Loop() {
					place(b, false)
				}
			})
			b.Run("with-outbox", func(b *testing.B) {
				for b.Loop() {
					place(b, true)
				}
			})
		})
	}
}

// writeN writes n facts, a thousand per transaction.
func (s *store) writeN(n int) {
	for n > 0 {
		k := min(n, 1000)
		payloads := make([]any, k)
		for i := range payloads {
			payloads[i] = order{ID: "o", Total: i}
		}
		s.write(factPlaced, payloads...)
		n -= k
	}
}

func (s *store) placeholder(n int) string {
	if s.dialect == outbox.Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// purge empties the consumer's queue between benchmarks.
func (b *broker) purge() {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueuePurge(b.queue, false); err != nil {
		b.t.Fatal(err)
	}
}
