package outbox_test

import (
	"context"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// TestDisruptiveDatabaseOutageIsLoggedOnce: the relay's connection to
// PostgreSQL is cut for a few seconds while it runs and facts are written
// (straight to the database). It logs one record when the outage starts
// and one when it ends, with counts, and nothing per poll; every fact is
// published, each once.
func TestDisruptiveDatabaseOutageIsLoggedOnce(t *testing.T) {
	testenv.Disruptive(t)
	s := newPgxStore(t)
	b := newBroker(t, true)
	got := b.receive()
	dsn, err := url.Parse(testenv.PGDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(t, dsn.Host)
	dsn.Host = proxy.Addr()
	q := dsn.Query()
	q.Set("connect_timeout", "2")
	dsn.RawQuery = q.Encode()
	logs := &recorder{}
	r := s.relayOn(pgxdb.FromPool(openPool(t, dsn.String())), b.pub, outbox.RelayConfig{
		PollInterval: 20 * time.Millisecond,
		Logger:       slog.New(&levelFilter{logs, slog.LevelInfo}),
	})
	stop := runRelay(t, r)

	var ids []string
	ids = append(ids, s.write(factPlaced, order{ID: "before"}, order{ID: "before"})...)
	got.wait(len(ids))
	// Their rows deleted, so that the cut cannot fall between a confirm and
	// its delete (which would publish them again, as it should).
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })

	proxy.SetDown(true)
	testenv.Eventually(t, "the outage logged", func() bool { return logs.has("database unavailable") })
	for i := range 5 {
		ids = append(ids, s.write(factPlaced, order{ID: "during", Total: i})...)
	}
	time.Sleep(3 * time.Second) // the outage lasts: many polls fail meanwhile
	proxy.SetDown(false)
	got.wait(len(ids))
	testenv.Eventually(t, "the outage's end logged", func() bool { return logs.has("database available again") })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	for _, rec := range logs.records() {
		t.Logf("%s %s", rec.Level, rec.Message)
	}
	if n, m := logs.count("database unavailable"), logs.count("database available again"); n != 1 || m != 1 || len(logs.records()) != 2 {
		t.Errorf("logged %d outage starts, %d ends, %d records in all; want one of each and nothing else", n, m, len(logs.records()))
	}
	for _, rec := range logs.records() {
		if rec.Message == "outbox relay: database available again" {
			attrs := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			if attrs["failed_rounds"] == "" || attrs["failed_rounds"] == "0" || attrs["failed_rounds"] == "1" || attrs["down_for"] == "" {
				t.Errorf("end of outage record %v; want its duration and the many rounds that failed", attrs)
			}
		}
	}
	seen := map[string]int{}
	for _, d := range got.wait(len(ids)) {
		seen[d.MessageId]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("message %s published %d times; want once", id, seen[id])
		}
	}
}

// TestDisruptiveBrokerOutageIsLoggedOnce: the relay's broker connection
// is cut for a few seconds while facts are written. Its publishes time out
// round after round, which costs the rows no attempt; it logs one record
// when the outage starts and one when it ends, and every fact arrives.
func TestDisruptiveBrokerOutageIsLoggedOnce(t *testing.T) {
	testenv.Disruptive(t)
	s := newSQLiteStore(t)
	b := newBroker(t, true) // its own connection receives, straight to the broker
	got := b.receive()
	amqpURL, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(t, amqpURL.Host)
	amqpURL.Host = proxy.Addr()
	ctx := context.Background()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{amqpURL.String()}, Logger: quietLogger(),
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	pub, err := runtime.NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	logs := &recorder{}
	r := s.relay(pub, outbox.RelayConfig{
		PollInterval:   20 * time.Millisecond,
		PublishTimeout: 200 * time.Millisecond,
		MaxAttempts:    2, // an outage that spent attempts would mark the rows failed
		Logger:         slog.New(&levelFilter{logs, slog.LevelInfo}),
	})
	stop := runRelay(t, r)

	ids := s.write(factPlaced, order{ID: "before"})
	got.wait(len(ids))
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })

	proxy.SetDown(true)
	for i := range 5 {
		ids = append(ids, s.write(factPlaced, order{ID: "during", Total: i})...)
	}
	testenv.Eventually(t, "the outage logged", func() bool { return logs.has("broker unavailable") })
	time.Sleep(2 * time.Second) // the outage lasts: many rounds time out meanwhile
	proxy.SetDown(false)
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })
	testenv.Eventually(t, "the outage's end logged", func() bool { return logs.has("broker available again") })
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	for _, rec := range logs.records() {
		t.Logf("%s %s", rec.Level, rec.Message)
	}
	if n, m := logs.count("broker unavailable"), logs.count("broker available again"); n != 1 || m != 1 || len(logs.records()) != 2 {
		t.Errorf("logged %d outage starts, %d ends, %d records in all; want one of each and nothing else", n, m, len(logs.records()))
	}
	if st := r.Stats(); st.MarkedFailed != 0 {
		t.Errorf("stats %+v: the outage marked rows failed", st)
	}
	seen := map[string]int{}
	for _, d := range got.wait(len(ids)) {
		seen[d.MessageId]++
	}
	for _, id := range ids {
		if seen[id] == 0 {
			t.Errorf("message %s never arrived", id)
		}
	}
}

// levelFilter passes records at or above min to h.
type levelFilter struct {
	*recorder
	min slog.Level
}

func (f *levelFilter) Enabled(_ context.Context, l slog.Level) bool { return l >= f.min }

func (f *levelFilter) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f *levelFilter) WithGroup(string) slog.Handler      { return f }
