package console

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// sqliteOutbox is an outbox table in a SQLite file of its own, read as
// the console reads one.
type sqliteOutbox struct {
	ob *outbox.Outbox
	db *sql.DB
}

func (o sqliteOutbox) Table() string { return o.ob.Table() }
func (o sqliteOutbox) Status(ctx context.Context) (outbox.Status, error) {
	return o.ob.Status(ctx, sqldb.FromSQL(o.db))
}

// TestOverviewShowsFactsForLater: with delay levels the overview counts
// the facts waiting in them by level and bounds the next due time; with
// an outbox it shows the table's pending and scheduled rows and the next
// due time; an outbox that can no longer be read keeps its last figures
// and says why.
func TestOverviewShowsFactsForLater(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{Dialect: outbox.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	fact := runtime.Fact{RoutingKey: "order.reminder"}
	for _, w := range []*outbox.Outbox{ob, ob.At(due), ob.At(due.Add(time.Hour))} {
		if _, err := w.Write(ctx, tx, fact, map[string]string{"order_id": "o-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	c := newConsoleOf(t, topology.Spec{Delays: true}, func(cfg *Config) { cfg.Outbox = sqliteOutbox{ob: ob, db: db} })
	key, err := topology.DelayedRoutingKey("order.placed")
	if err != nil {
		t.Fatal(err)
	}
	msg := amqpPublishing(`{}`)
	if msg.Headers == nil {
		msg.Headers = map[string]any{}
	}
	if _, err := topology.SetDelayHeaders(msg.Headers, time.Hour); err != nil {
		t.Fatal(err)
	}
	c.publish(c.top.Delay.Exchange, key, msg)
	var o overviewJSON
	testenv.Eventually(t, "the delayed fact and the outbox's schedule", func() bool {
		c.getJSON("/api/overview", &o)
		return o.Delayed != nil && o.Delayed.Waiting == 1 && o.Outbox != nil && o.Outbox.Scheduled == 2
	})
	// An hour is 3,600,000 ms: the fact waits first in level 21, the
	// highest bit of its delay.
	if d := o.Delayed; len(d.Levels) != 1 || d.Levels[0].Queue != topology.DelayExchange(topology.DefaultExchanges.Events, 21) || d.NextDueWithin != "1h9m54s" || d.Unroutable != 0 || len(d.Missing) != 0 {
		t.Errorf("delayed = %+v", d)
	}
	if x := o.Outbox; x.Table != "warren_outbox" || x.Pending != 1 || x.NextDue == nil || !x.NextDue.Equal(due) || x.OldestPending == nil || x.Error != "" {
		t.Errorf("outbox = %+v", x)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the outbox's failed reading", func() bool {
		c.getJSON("/api/overview", &o)
		return o.Outbox != nil && o.Outbox.Error != ""
	})
	if o.Outbox.Scheduled != 2 || o.Outbox.Pending != 1 {
		t.Errorf("after a failed reading the outbox's last figures are gone: %+v", o.Outbox)
	}
}

// Without delay levels or an outbox, the overview has neither.
func TestOverviewWithoutFactsForLater(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	status, body := c.do("GET", "/api/overview", "", nil)
	if status != 200 || containsAny(body, `"delayed"`, `"outbox"`) {
		t.Errorf("overview: %d %s", status, body)
	}
}
