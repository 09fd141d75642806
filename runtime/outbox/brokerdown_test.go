package outbox_test

import (
	"context"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// publisherThroughProxy returns a publisher on the events exchange over a
// runtime connection of its own that reaches the broker through a proxy
// the test can cut.
func (b *broker) publisherThroughProxy() (*runtime.Publisher, *runtime.Conn, *testenv.TCPProxy) {
	b.t.Helper()
	u, err := url.Parse(b.url)
	if err != nil {
		b.t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(b.t, u.Host)
	u.Host = proxy.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{u.String()}, Logger: quietLogger(),
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close() })
	pub, err := runtime.NewPublisher(conn, b.events())
	if err != nil {
		b.t.Fatal(err)
	}
	return pub, conn, proxy
}

// tryWrite writes one fact in a transaction of its own and commits it,
// returning its id or the error that stopped it.
func (s *store) tryWrite(o order) (string, error) {
	ctx := context.Background()
	tx, err := s.txDB.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	id, err := s.ob.Write(ctx, execer(tx), factPlaced, o)
	if err != nil {
		return "", err
	}
	return id, tx.Commit(ctx)
}

// TestDisruptiveBrokerOutageLeavesSQLiteToTheWriters: on SQLite a relay's
// claim holds the database's one write lock until it commits. While its
// broker is unreachable the relay claims nothing, rather than hold that
// lock through a publish that waits for the broker (up to PublishTimeout,
// an hour here): the business transactions written meanwhile, each
// waiting at most 100ms for the lock, all commit, and their facts are
// published once the broker is back.
func TestDisruptiveBrokerOutageLeavesSQLiteToTheWriters(t *testing.T) {
	testenv.Disruptive(t)
	dsn := "file:" + filepath.Join(t.TempDir(), "shop.db") + "?_pragma=busy_timeout(100)&_pragma=journal_mode(WAL)"
	db := testenv.OpenDB(t, "sqlite", dsn)
	s := newStore(t, outbox.SQLite, db, sqldb.FromSQL(db), func() sqldb.DB { return sqldb.FromSQL(testenv.OpenDB(t, "sqlite", dsn)) })
	b := newBroker(t, true)
	got := b.receive()
	pub, conn, proxy := b.publisherThroughProxy()
	r := s.relay(pub, outbox.RelayConfig{PollInterval: 20 * time.Millisecond, PublishTimeout: time.Hour})
	runRelay(t, r)

	first, err := s.tryWrite(order{ID: "before"})
	if err != nil {
		t.Fatal(err)
	}
	got.wait(1)
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })

	proxy.SetDown(true)
	testenv.Eventually(t, "the relay's connection lost", func() bool { return !conn.Health().Connected })
	ids := []string{first}
	failed := 0
	for i := range 8 {
		id, err := s.tryWrite(order{ID: "during", Total: i})
		if err != nil {
			failed++
			t.Logf("write %d: %v", i, err)
			continue
		}
		ids = append(ids, id)
		// Room for the relay, woken by the commit, to claim the fact.
		time.Sleep(50 * time.Millisecond)
	}
	if failed != 0 {
		t.Errorf("%d of 8 business transactions failed while the broker was down; want none (the relay must not hold the write lock through the outage)", failed)
	}

	proxy.SetDown(false)
	wantEveryFact(t, s, r, got, ids)
}

// TestDisruptiveRelayCutOffFromTheBrokerLeavesTheTableToTheOthers: two
// relays serve one PostgreSQL table and take turns, a round each, under
// an advisory lock. The first loses its broker (its own connection, cut
// at a proxy), the second keeps its own. The first claims nothing while
// its broker is unreachable, rather than hold the lock through a publish
// that waits for the broker (up to an hour here), so the second publishes
// every fact written meanwhile, in separate transactions, while the first
// is still cut off.
func TestDisruptiveRelayCutOffFromTheBrokerLeavesTheTableToTheOthers(t *testing.T) {
	testenv.Disruptive(t)
	s := newPostgresStore(t)
	b := newBroker(t, true)
	got := b.receive()
	cutPub, cutConn, proxy := b.publisherThroughProxy()
	cfg := outbox.RelayConfig{PollInterval: 20 * time.Millisecond, PublishTimeout: time.Hour}
	cut := s.relayOn(s.open(), cutPub, cfg)
	runRelay(t, cut)
	healthy := s.relayOn(s.open(), b.publisherOnOwnConnection(), cfg)
	runRelay(t, healthy)

	ids := []string{}
	id, err := s.tryWrite(order{ID: "before"})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	got.wait(1)
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })

	proxy.SetDown(true)
	testenv.Eventually(t, "the first relay's connection lost", func() bool { return !cutConn.Health().Connected })
	before := cut.Stats().Published
	for i := range 20 {
		id, err := s.tryWrite(order{ID: "during", Total: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		// A round each: both relays are woken by every commit.
		time.Sleep(20 * time.Millisecond)
	}
	all := got.wait(len(ids))
	if n := cut.Stats().Published - before; n != 0 {
		t.Errorf("the relay without a broker published %d facts", n)
	}
	proxy.SetDown(false)
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })
	seen := map[string]int{}
	for _, d := range all {
		seen[d.MessageId]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("message %s arrived %d times; want once", id, seen[id])
		}
	}
}

// TestDisruptiveBrokerLostMidRoundReleasesSQLite: the broker goes away
// while a round is publishing (its first publish held back by publish
// middleware until the relay's connection is cut). The round gives up its
// unsent facts once the broker has stayed away for a moment, as
// unavailable (no attempt spent), and commits, rather than hold SQLite's
// write lock for its PublishTimeout (an hour here): business transactions
// written meanwhile, each waiting up to 5s for the lock, all commit, and
// every fact is published once the broker is back.
func TestDisruptiveBrokerLostMidRoundReleasesSQLite(t *testing.T) {
	testenv.Disruptive(t)
	dsn := "file:" + filepath.Join(t.TempDir(), "shop.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db := testenv.OpenDB(t, "sqlite", dsn)
	s := newStore(t, outbox.SQLite, db, sqldb.FromSQL(db), func() sqldb.DB { return sqldb.FromSQL(testenv.OpenDB(t, "sqlite", dsn)) })
	b := newBroker(t, true)
	got := b.receive()
	u, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	conn, err := runtime.Dial(context.Background(), runtime.Config{URLs: []string{u.String()}, Logger: quietLogger(),
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	inRound, cutDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pub, err := runtime.NewPublisher(conn, b.events(), runtime.WithPublishMiddleware(func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, out *runtime.Outgoing) error {
			once.Do(func() {
				close(inRound)
				<-cutDone
			})
			return next(ctx, out)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	r := s.relay(pub, outbox.RelayConfig{PollInterval: 20 * time.Millisecond, PublishTimeout: time.Hour, MaxAttempts: 1})
	runRelay(t, r)

	first, err := s.tryWrite(order{ID: "claimed when the broker goes"})
	if err != nil {
		t.Fatal(err)
	}
	<-inRound
	proxy.SetDown(true)
	testenv.Eventually(t, "the relay's connection lost", func() bool { return !conn.Health().Connected })
	close(cutDone)

	ids := []string{first}
	failed := 0
	for i := range 3 {
		id, err := s.tryWrite(order{ID: "during", Total: i})
		if err != nil {
			failed++
			t.Logf("write %d: %v", i, err)
			continue
		}
		ids = append(ids, id)
	}
	if failed != 0 {
		t.Errorf("%d of 3 business transactions failed while the broker was down; want none (the round must not hold the write lock through the outage)", failed)
	}

	proxy.SetDown(false)
	wantEveryFact(t, s, r, got, ids)
}

// wantEveryFact waits, once the broker is back, for every fact of ids
// to arrive and the outbox to empty, and checks that the outage marked no
// row failed (it must cost no attempt).
func wantEveryFact(t *testing.T, s *store, r *outbox.Relay, got *receiver, ids []string) {
	t.Helper()
	all := got.wait(len(ids))
	testenv.Eventually(t, "an empty outbox", func() bool { return len(s.rows()) == 0 })
	seen := map[string]int{}
	for _, d := range all {
		seen[d.MessageId]++
	}
	for _, id := range ids {
		if seen[id] == 0 {
			t.Errorf("message %s never arrived", id)
		}
	}
	if st := r.Stats(); st.MarkedFailed != 0 {
		t.Errorf("stats %+v: the outage marked rows failed", st)
	}
}
