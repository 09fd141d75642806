package bench

import (
	"context"
	"flag"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// The size of BenchmarkScheduleLateness: how many facts are scheduled, and
// the delays they are spread over. Smaller runs, for trying a change:
//
//	go test -run '^$' -bench ScheduleLateness -benchtime 1x -args -schedule.facts 1000 -schedule.spread 10s
var (
	scheduleFacts  = flag.Int("schedule.facts", 10000, "BenchmarkScheduleLateness: facts scheduled per path")
	scheduleSpread = flag.Duration("schedule.spread", time.Minute, "BenchmarkScheduleLateness: the longest delay; delays are spread evenly up to it")
)

// outboxWriters is how many goroutines write to the outbox, each write in a
// transaction of its own, on a pool of as many connections.
const outboxWriters = 16

// BenchmarkScheduleLateness schedules facts (-schedule.facts, 10,000) with
// delays spread evenly over -schedule.spread (a minute), published in a
// shuffled order, and measures how late each arrives at a running generated
// consumer (bench-quorum, the manifest's prefetch and concurrency): the
// time it is handled minus its Delivery.DueAt. Beside it, in the same run
// and over the same connection, the same facts are first published now
// with the same API and concurrency, and both rates are reported.
//
//   - broker: the generated Publisher from 256 goroutines (as
//     BenchmarkPublish), PublishOrderPlaced now, then through In(d), which
//     the broker holds in the delay levels of the events exchange;
//   - outbox: the generated OutboxWriter from 16 goroutines, each write in
//     a PostgreSQL transaction of its own through a pgx pool, WriteOrderPlaced
//     now, then through In(d); one generated relay with the defaults
//     (pgxdb.FromPool, so it LISTENs and wakes on commit; 500ms poll
//     interval) publishes them when due.
//
// Metrics: late-p50-ms, late-p99-ms and late-max-ms over every scheduled
// fact (each counted once, at its first arrival), also logged for eight
// windows of their due times; now-msgs/s and
// sched-msgs/s, the rates of publishing (or writing and committing) now
// and scheduled; sched/now, their ratio; redelivered, arrivals of a fact
// already seen. It takes about the spread plus a minute per path:
//
//	go test -run '^$' -bench ScheduleLateness -benchtime 1x
func BenchmarkScheduleLateness(b *testing.B) {
	n, spread := *scheduleFacts, *scheduleSpread
	orders := make([]benchevents.OrderPlaced, n)
	for i := range orders {
		orders[i] = order(i)
	}
	delays := spreadDelays(n, spread)
	b.Run("broker", func(b *testing.B) {
		e := newEnv(b, "quorum")
		pub, err := benchevents.NewPublisher(e.conn)
		if err != nil {
			b.Fatal(err)
		}
		defer pub.Close()
		ctx := context.Background()
		lateness(b, e, n, window,
			func(i int) error {
				_, err := pub.PublishOrderPlaced(ctx, orders[i])
				return err
			},
			func(i int) error {
				_, err := pub.In(delays[i]).PublishOrderPlaced(ctx, orders[i])
				return err
			})
	})
	b.Run("outbox", func(b *testing.B) {
		e := newEnv(b, "quorum")
		pool, w := outboxStore(b)
		cfg := outbox.RelayConfig{Dialect: outbox.Postgres, Table: w.Outbox().Table(), Logger: e.logger}
		relay, err := benchevents.NewOutboxRelay(pgxdb.FromPool(pool), e.conn, cfg)
		if err != nil {
			b.Fatal(err)
		}
		inBackground(b, relay.Run)
		ctx := context.Background()
		write := func(w *benchevents.OutboxWriter, i int) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
			if _, err := w.WriteOrderPlaced(ctx, pgxdb.Tx(tx), orders[i]); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
		lateness(b, e, n, outboxWriters,
			func(i int) error { return write(w, i) },
			func(i int) error { return write(w.In(delays[i]), i) })
	})
}

// spreadDelays returns n delays spread evenly over (0, spread], in an order
// that is not theirs: the i-th fact published gets the (i·7919 mod n)-th
// shortest, so facts due close together are published far apart.
func spreadDelays(n int, spread time.Duration) []time.Duration {
	stride := 7919 // a prime: a permutation for any n it does not divide
	if n%stride == 0 {
		stride = 1
	}
	d := make([]time.Duration, n)
	for i := range d {
		k := (i * stride) % n
		d[i] = time.Duration(k+1) * spread / time.Duration(n)
	}
	return d
}

// outboxStore returns a pgx pool on the test database with a connection
// for every writer and a few for the relay, and an OutboxWriter on a fresh
// outbox table, dropped when b ends.
func outboxStore(b *testing.B) (*pgxpool.Pool, *benchevents.OutboxWriter) {
	b.Helper()
	dsn := testenv.PGDSN(b)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = outboxWriters + 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	w, err := benchevents.NewOutboxWriter(outbox.Config{Dialect: outbox.Postgres, Table: testenv.TableName("bench_outbox")})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Outbox().MigrateDB(context.Background(), pgxdb.FromPool(pool)); err != nil {
		b.Fatal(err)
	}
	db := testenv.OpenDB(b, "pgx", dsn)
	testenv.DropTable(b, db, w.Outbox().Table())
	testenv.DropTable(b, db, w.Outbox().SequenceTable())
	testenv.DropTable(b, db, w.Outbox().SequenceSourceTable())
	return pool, w
}

// lateness runs one path of BenchmarkScheduleLateness on e's quorum work
// queue, with a generated consumer running throughout: n facts through now
// (published now), from workers goroutines, until the consumer has them
// all; then n facts through later (scheduled), until the consumer has them
// all; and reports the rates and the lateness.
func lateness(b *testing.B, e *env, n, workers int, now, later func(i int) error) {
	arrivals := newArrivals()
	c, err := benchevents.NewBenchQuorumConsumer(e.conn, arrivals)
	if err != nil {
		b.Fatal(err)
	}
	inBackground(b, c.Run)
	var late []time.Duration
	var nowRate, laterRate float64
	for b.Loop() {
		arrivals.reset()
		nowRate += float64(n) / inParallel(b, n, workers, now).Seconds()
		arrivals.await(b, n, false)
		laterRate += float64(n) / inParallel(b, n, workers, later).Seconds()
		facts := arrivals.await(b, n, true)
		logByDueTime(b, facts)
		for _, f := range facts {
			late = append(late, f.late)
		}
	}
	p50, p99, most := percentiles(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(p50), "late-p50-ms")
	b.ReportMetric(ms(p99), "late-p99-ms")
	b.ReportMetric(ms(most), "late-max-ms")
	b.ReportMetric(nowRate/float64(b.N), "now-msgs/s")
	b.ReportMetric(laterRate/float64(b.N), "sched-msgs/s")
	b.ReportMetric(laterRate/nowRate, "sched/now")
	b.ReportMetric(float64(arrivals.redelivered.Load())/float64(b.N), "redelivered")
}

// percentiles sorts late and returns its median, 99th percentile and
// maximum.
func percentiles(late []time.Duration) (p50, p99, most time.Duration) {
	slices.Sort(late)
	return late[len(late)/2], late[len(late)*99/100], late[len(late)-1]
}

// logByDueTime logs the lateness of facts by when they were due, in eight
// windows from the first due time to the last: where in the schedule the
// late ones were. (A benchmark's log is cut at ten lines without -v.)
func logByDueTime(b *testing.B, facts []scheduledFact) {
	first, last := facts[0].due, facts[0].due
	for _, f := range facts {
		first, last = minTime(first, f.due), maxTime(last, f.due)
	}
	const windows = 8
	width := last.Sub(first)/windows + time.Millisecond
	var byWindow [windows][]time.Duration
	for _, f := range facts {
		w := int(f.due.Sub(first) / width)
		byWindow[w] = append(byWindow[w], f.late)
	}
	for w, l := range byWindow {
		if len(l) > 0 {
			p50, p99, most := percentiles(l)
			from, to := time.Duration(w)*width, time.Duration(w+1)*width
			b.Logf("due %5.1fs to %5.1fs after the first: %5d facts, late p50 %6s, p99 %6s, max %6s", from.Seconds(), to.Seconds(), len(l),
				p50.Round(time.Millisecond), p99.Round(time.Millisecond), most.Round(time.Millisecond))
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// inBackground calls run (a consumer's or a relay's Run) on a goroutine
// until b ends, and fails b if it returns an error.
func inBackground(b *testing.B, run func(context.Context) error) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
}

// inParallel calls do for 0..n-1 from workers goroutines and returns how
// long they took.
func inParallel(b *testing.B, n, workers int, do func(i int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := do(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return time.Since(start)
}

// arrivals is the consumer's handler: it counts the facts published now
// and records how late each scheduled fact was, once per message id, at
// its first arrival.
type arrivals struct {
	mu          sync.Mutex
	seen        map[string]bool
	now         int             // facts without a due time
	late        []scheduledFact // the facts with one
	redelivered atomic.Int64
	changed     chan struct{} // receives after each new fact, when not full
}

func newArrivals() *arrivals {
	return &arrivals{seen: map[string]bool{}, changed: make(chan struct{}, 1)}
}

func (a *arrivals) HandleOrderPlaced(_ context.Context, d runtime.Delivery, _ benchevents.OrderPlaced) error {
	at := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen[d.MessageID] {
		a.redelivered.Add(1)
		return nil
	}
	a.seen[d.MessageID] = true
	if d.DueAt.IsZero() {
		a.now++
	} else {
		a.late = append(a.late, scheduledFact{due: d.DueAt, late: at.Sub(d.DueAt)})
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
	return nil
}

func (a *arrivals) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen, a.now, a.late = map[string]bool{}, 0, nil
}

// scheduledFact is when a scheduled fact was due, and how late it arrived.
type scheduledFact struct {
	due  time.Time
	late time.Duration
}

// await waits until n facts published now (scheduled false) or n scheduled
// facts have arrived, and returns the scheduled ones. It
// gives up when no new fact has arrived for a minute past the longest
// delay, naming how many are missing.
func (a *arrivals) await(b *testing.B, n int, scheduled bool) []scheduledFact {
	b.Helper()
	count := func() int {
		a.mu.Lock()
		defer a.mu.Unlock()
		if scheduled {
			return len(a.late)
		}
		return a.now
	}
	quiet := *scheduleSpread + time.Minute
	t := time.NewTimer(quiet)
	defer t.Stop()
	for got := count(); got < n; got = count() {
		select {
		case <-a.changed:
			t.Reset(quiet)
		case <-t.C:
			b.Fatalf("%d of %d facts arrived, then none for %s", got, n, quiet)
		}
	}
	if !scheduled {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.late)
}
