package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
	"github.com/warrenbus/warren/runtime/topology"
)

// order is the payload the tests write.
type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

// factPlaced is routed to the test consumer's queue (bound to order.*).
var factPlaced = runtime.Fact{RoutingKey: "order.placed", Version: 2}

// store is one test's outbox table, in SQLite or PostgreSQL, written and
// relayed through database/sql or through pgx.
type store struct {
	t       testing.TB
	db      *sql.DB // for the tests' own reads and writes
	dialect outbox.Dialect
	ob      *outbox.Outbox
	// txDB is what business transactions and the relay use: db itself
	// (as sqldb.FromSQL, or pgxdb.FromSQL on PostgreSQL, which listens), or
	// a pgx pool on the same database.
	txDB sqldb.DB
	// open opens another such DB on the same database, with its own pool.
	open func() sqldb.DB
}

// forEachDB runs test on an SQLite file, on PostgreSQL through
// database/sql and on PostgreSQL through a pgx pool, each with a fresh
// outbox table that is dropped when the subtest ends. PostgreSQL is
// skipped locally when the server is down (never in CI).
func forEachDB(t *testing.T, test func(t *testing.T, s *store)) {
	t.Run("sqlite", func(t *testing.T) { test(t, newSQLiteStore(t)) })
	t.Run("postgres", func(t *testing.T) { test(t, newPostgresStore(t)) })
	t.Run("pgx", func(t *testing.T) { test(t, newPgxStore(t)) })
}

func newSQLiteStore(t testing.TB) *store {
	return newSQLiteStoreNamed(t, testenv.TableName("warren_outbox"))
}

// newSQLiteStoreNamed is newSQLiteStore, in a database file of its own,
// with the outbox table named table.
func newSQLiteStoreNamed(t testing.TB, table string) *store {
	dsn := "file:" + filepath.Join(t.TempDir(), "shop.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db := testenv.OpenDB(t, "sqlite", dsn)
	return newStoreNamed(t, outbox.SQLite, db, sqldb.FromSQL(db), func() sqldb.DB { return sqldb.FromSQL(testenv.OpenDB(t, "sqlite", dsn)) }, table)
}

func newPostgresStore(t testing.TB) *store {
	dsn := testenv.PGDSN(t)
	db := testenv.OpenDB(t, "pgx", dsn)
	return newStore(t, outbox.Postgres, db, pgxdb.FromSQL(db), func() sqldb.DB { return pgxdb.FromSQL(testenv.OpenDB(t, "pgx", dsn)) })
}

func newPgxStore(t testing.TB) *store {
	dsn := testenv.PGDSN(t)
	return newStore(t, outbox.Postgres, testenv.OpenDB(t, "pgx", dsn), pgxdb.FromPool(openPool(t, dsn)), func() sqldb.DB { return pgxdb.FromPool(openPool(t, dsn)) })
}

func newStore(t testing.TB, d outbox.Dialect, db *sql.DB, txDB sqldb.DB, open func() sqldb.DB) *store {
	t.Helper()
	return newStoreNamed(t, d, db, txDB, open, testenv.TableName("warren_outbox"))
}

// newStoreNamed is newStore with the outbox table named table.
func newStoreNamed(t testing.TB, d outbox.Dialect, db *sql.DB, txDB sqldb.DB, open func() sqldb.DB, table string) *store {
	t.Helper()
	ob, err := outbox.New(outbox.Config{Dialect: d, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.MigrateDB(context.Background(), txDB); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, ob.Table())
	testenv.DropTable(t, db, ob.SequenceTable())
	testenv.DropTable(t, db, ob.SequenceSourceTable())
	return &store{t: t, db: db, dialect: d, ob: ob, txDB: txDB, open: open}
}

// openPool opens a pgx pool that is closed when t ends.
func openPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open pgx pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// begin opens a business transaction on the store's txDB.
func (s *store) begin(ctx context.Context) sqldb.Tx {
	s.t.Helper()
	tx, err := s.txDB.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return tx
}

// execer is what a user hands to Write for tx: the *sql.Tx itself, or the
// pgx.Tx wrapped by pgxdb.Tx.
func execer(tx sqldb.Tx) sqldb.Execer {
	switch native := tx.Native().(type) {
	case *sql.Tx:
		return native
	case pgx.Tx:
		return pgxdb.Tx(native)
	}
	panic(fmt.Sprintf("transaction of unknown kind %T", tx.Native()))
}

// write writes payloads of fact f in one transaction and commits it,
// returning their message ids.
func (s *store) write(f runtime.Fact, payloads ...any) []string {
	s.t.Helper()
	ctx := context.Background()
	tx := s.begin(ctx)
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	ids := make([]string, len(payloads))
	for i, p := range payloads {
		var err error
		if ids[i], err = s.ob.Write(ctx, execer(tx), f, p); err != nil {
			s.t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		s.t.Fatal(err)
	}
	return ids
}

// moveToEnd deletes the row with id and inserts it again, so that it is
// stored after the others.
func (s *store) moveToEnd(id string) {
	s.t.Helper()
	p := func(n int) string {
		if s.dialect == outbox.Postgres {
			return fmt.Sprintf("$%d", n)
		}
		return "?"
	}
	q := fmt.Sprintf(`WITH moved AS (DELETE FROM "%[1]s" WHERE id = %[2]s RETURNING *) INSERT INTO "%[1]s" SELECT * FROM moved`, s.ob.Table(), p(1))
	if s.dialect == outbox.SQLite {
		// SQLite has no DELETE in a WITH clause: copy, then delete.
		tmp := testenv.TableName("moved")
		q = fmt.Sprintf(`CREATE TEMP TABLE %[3]s AS SELECT * FROM "%[1]s" WHERE id = %[2]s; DELETE FROM "%[1]s" WHERE id = %[2]s; INSERT INTO "%[1]s" SELECT * FROM %[3]s; DROP TABLE %[3]s`, s.ob.Table(), "'"+id+"'", tmp)
		if _, err := s.db.Exec(q); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	if _, err := s.db.Exec(q, id); err != nil {
		s.t.Fatal(err)
	}
}

// outboxRow is a row of the outbox table as the tests see it.
type outboxRow struct {
	ID         string
	RoutingKey string
	Version    int
	Envelope   []byte
	Attempts   int
	LastError  sql.NullString
}

// rows returns the outbox table's rows in id order.
func (s *store) rows() []outboxRow {
	s.t.Helper()
	q := fmt.Sprintf(`SELECT id, routing_key, version, envelope, attempts, last_error FROM "%s" ORDER BY id`, s.ob.Table())
	rs, err := s.db.Query(q)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rs.Close()
	var out []outboxRow
	for rs.Next() {
		var r outboxRow
		if err := rs.Scan(&r.ID, &r.RoutingKey, &r.Version, &r.Envelope, &r.Attempts, &r.LastError); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// relay returns a relay over the store's table, on its txDB, with quiet
// logs and the given settings.
func (s *store) relay(pub *runtime.Publisher, cfg outbox.RelayConfig) *outbox.Relay {
	s.t.Helper()
	return s.relayOn(s.txDB, pub, cfg)
}

// relayOn is relay on db.
func (s *store) relayOn(db sqldb.DB, pub *runtime.Publisher, cfg outbox.RelayConfig) *outbox.Relay {
	s.t.Helper()
	cfg.Dialect = s.dialect
	cfg.Table = s.ob.Table()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	r, err := outbox.NewRelayDB(db, pub, cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// broker is one test's topology on the real broker (a consumer bound to
// order.*), a runtime connection and a publisher on its events exchange,
// and a plain connection for reading the queue and cleaning up.
type broker struct {
	t     testing.TB
	url   string
	top   topology.Topology
	conn  *runtime.Conn
	pub   *runtime.Publisher
	raw   *amqp.Connection
	queue string
}

// newBroker builds the test topology under unique names. With declared
// false nothing is declared yet, so publishes fail until the test calls
// declare.
func newBroker(t testing.TB, declared bool) *broker {
	t.Helper()
	url := testenv.AMQPURL(t)
	return newBrokerAt(t, url, []string{url}, declared)
}

// newBrokerAt is newBroker on the nodes of a cluster: the plain connection
// to url, the runtime's to urls, the first that answers.
func newBrokerAt(t testing.TB, url string, urls []string, declared bool) *broker {
	t.Helper()
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("outbox-sink"), Bindings: []string{"order.*"}, MaxAttempts: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, url: url, top: top, raw: raw, queue: top.Consumers[0].Queue}
	t.Cleanup(b.cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := runtime.Config{URLs: urls, Logger: quietLogger(), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond}
	if declared {
		cfg.Topology = &b.top
	}
	if b.conn, err = runtime.Dial(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.conn.Close() })
	if b.pub, err = runtime.NewPublisher(b.conn, b.events()); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *broker) events() string { return b.top.Exchanges[0].Name }

// declare declares the whole topology.
func (b *broker) declare() {
	b.t.Helper()
	if err := b.conn.Declare(context.Background(), b.top); err != nil {
		b.t.Fatal(err)
	}
}

// declareExchange declares only the events exchange: facts published to it
// reach no queue.
func (b *broker) declareExchange() {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(b.events(), "topic", true, false, false, false, nil); err != nil {
		b.t.Fatal(err)
	}
}

func (b *broker) cleanup() {
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Errorf("cleanup: %v", err)
		return
	}
	defer b.raw.Close()
	for _, q := range b.top.Queues {
		if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
			b.t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
			return
		}
	}
	for _, e := range b.top.Exchanges {
		if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
			b.t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
			return
		}
	}
}

// depth returns how many messages wait in the consumer's queue.
func (b *broker) depth() int {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(b.queue, true, false, false, false, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return q.Messages
}

// receiver takes messages off the consumer's queue as they arrive, in the
// order the broker delivers them.
type receiver struct {
	t      testing.TB
	mu     sync.Mutex
	got    []amqp.Delivery
	stop   func()
	closed chan struct{}
}

func (b *broker) receive() *receiver {
	b.t.Helper()
	ch, err := b.raw.Channel()
	if err != nil {
		b.t.Fatal(err)
	}
	deliveries, err := ch.Consume(b.queue, "", true, false, false, false, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	r := &receiver{t: b.t, closed: make(chan struct{})}
	var once sync.Once
	r.stop = func() { once.Do(func() { _ = ch.Close(); <-r.closed }) }
	b.t.Cleanup(r.stop)
	go func() {
		defer close(r.closed)
		for d := range deliveries {
			r.mu.Lock()
			r.got = append(r.got, d)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// wait waits, with a generous deadline, until n messages have arrived, and
// returns all received so far.
func (r *receiver) wait(n int) []amqp.Delivery {
	r.t.Helper()
	testenv.Eventually(r.t, fmt.Sprintf("%d messages", n), func() bool { return r.count() >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]amqp.Delivery(nil), r.got...)
}

// clock is a settable clock for the relay's retry times.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// publisherOnOwnConnection returns a publisher on the events exchange over
// a runtime connection of its own, closed when the test ends.
func (b *broker) publisherOnOwnConnection() *runtime.Publisher {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{b.url}, Logger: quietLogger(), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close() })
	pub, err := runtime.NewPublisher(conn, b.events())
	if err != nil {
		b.t.Fatal(err)
	}
	return pub
}
