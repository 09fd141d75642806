package outbox_test

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// pruneHoldingDB is a DB whose prune of kept rows does not finish before
// its context ends, as a slow DELETE on a large table would not: the
// relay's ctx is cancelled while Run prunes.
type pruneHoldingDB struct {
	sqldb.DB
	once    sync.Once
	entered chan struct{} // closed when the first prune statement starts
}

func (p *pruneHoldingDB) BeginTx(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return pruneHoldingTx{Tx: tx, db: p}, nil
}

type pruneHoldingTx struct {
	sqldb.Tx
	db *pruneHoldingDB
}

func (t pruneHoldingTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if strings.HasPrefix(query, "DELETE FROM") && strings.Contains(query, "discarded_at <") {
		t.db.once.Do(func() { close(t.db.entered) })
		<-ctx.Done()
		return nil, ctx.Err() // what the driver returns for a statement cancelled with its ctx
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// TestRunStoppedWhilePruningLogsNoOutage: cancelling Run's ctx is a
// shutdown, whatever the relay was doing. A prune cut short by it is not
// a database outage, so the relay logs nothing at warning level or above
// (an error record at every deploy would page someone for nothing).
func TestRunStoppedWhilePruningLogsNoOutage(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		b := newBroker(t, true)
		logs := &recorder{}
		db := &pruneHoldingDB{DB: s.txDB, entered: make(chan struct{})}
		r := s.relayOn(db, b.pub, outbox.RelayConfig{PollInterval: time.Hour, Logger: slog.New(logs)})
		stop := runRelay(t, r)
		<-db.entered // Run's first round found nothing and prunes: stop it there
		if err := stop(); err != nil {
			t.Fatalf("Run returned %v; want nil", err)
		}
		for _, rec := range logs.records() {
			if rec.Level >= slog.LevelWarn {
				t.Errorf("logged at %s after a shutdown during a prune: %q", rec.Level, recordText(rec))
			}
		}
	})
}

// recordText renders a log record's message and attributes.
func recordText(rec slog.Record) string {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	return b.String()
}
