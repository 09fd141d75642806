package console

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// A saga's view lists the instances the page asks for, in its order and
// within its bound, with how many more there are; each instance's pending
// timeouts come with when the outbox has them due, and a timeout whose
// fact was published already comes without.
func TestSagaInstances(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: sqldb.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{Dialect: sqldb.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	store, err := saga.NewStore(sqldb.FromSQL(db), saga.Config{Dialect: sqldb.SQLite, Guard: guard, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The timeout the outbox still holds, due in an hour; another one's
	// fact left the outbox already (its id is in no row).
	due := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	fact := runtime.Fact{RoutingKey: "checkout.payment-due", Version: 1}
	dueID, err := ob.At(due).Write(ctx, db, fact, map[string]string{"order": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ob.In(time.Hour).Write(ctx, db, fact, map[string]string{"order": "o-3"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, r := range []struct {
		saga, id  string
		version   int
		timeouts  string
		completed any
		started   time.Duration
	}{
		{"checkout", "o-1", 3, fmt.Sprintf(`{"payment-due":%q,"reminder":"0190a000-0000-7000-8000-000000000000"}`, dueID), nil, 3 * time.Hour},
		{"checkout", "o-2", 1, `{}`, nil, 2 * time.Hour},
		{"checkout", "o-3", 2, `{}`, nil, time.Hour},
		{"checkout", "o-4", 5, `{}`, now.Add(-time.Minute).UnixMilli(), 5 * time.Hour},
		{"refund", "r-1", 1, fmt.Sprintf(`{"refund-due":%q}`, other), nil, 4 * time.Hour},
	} {
		if _, err := db.Exec(`INSERT INTO warren_saga_instances (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES (?, ?, ?, '{}', ?, ?, ?, ?)`,
			r.saga, r.id, r.version, r.timeouts, r.completed, now.Add(-r.started).UnixMilli(), now.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := saga.NewAdmin(sqldb.FromSQL(db), sqldb.SQLite, "", ob)
	if err != nil {
		t.Fatal(err)
	}
	c := newConsoleOf(t, topology.Spec{}, func(cfg *Config) { cfg.Sagas = admin })

	// The instances' ids, state and version, and their timeouts with due
	// times, in the order listed.
	list := func(p instancesJSON) string {
		var out []string
		for _, i := range p.Instances {
			s := fmt.Sprintf("%s %s v%d", i.Instance, i.State, i.Version)
			for _, x := range i.Timeouts {
				s += " " + x.Name
				if x.DueAt != nil {
					s += "@" + x.DueAt.Format(time.RFC3339Nano)
				}
			}
			out = append(out, s)
		}
		return strings.Join(out, "; ")
	}
	for _, tc := range []struct {
		query       string
		want        string
		total, more int64
	}{
		// The default: the oldest running first; no token needed to read.
		{"", "o-1 running v3 payment-due@" + due.Format(time.RFC3339Nano) + " reminder; o-2 running v1; o-3 running v2", 3, 0},
		{"?limit=2", "o-1 running v3 payment-due@" + due.Format(time.RFC3339Nano) + " reminder; o-2 running v1", 3, 1},
		{"?order=newest&limit=2", "o-3 running v2; o-2 running v1", 3, 1},
		{"?state=completed", "o-4 completed v5", 1, 0},
		{"?state=all&order=newest", "o-3 running v2; o-2 running v1; o-1 running v3 payment-due@" + due.Format(time.RFC3339Nano) + " reminder; o-4 completed v5", 4, 0},
	} {
		var p instancesJSON
		c.getJSON("/api/sagas/checkout/instances"+tc.query, &p)
		if got := list(p); got != tc.want || p.Total != tc.total || p.More != tc.more || p.Saga != "checkout" || p.Table != saga.DefaultTable {
			t.Errorf("%s: %s (total %d, %d more, saga %q, table %q)\nwant %s (total %d, %d more)", tc.query, got, p.Total, p.More, p.Saga, p.Table, tc.want, tc.total, tc.more)
		}
	}
	var p instancesJSON
	c.getJSON("/api/sagas/checkout/instances?state=completed", &p)
	if len(p.Instances) != 1 || p.Instances[0].CompletedAt == nil || !p.Instances[0].CreatedAt.Equal(now.Add(-5*time.Hour)) {
		t.Errorf("the completed instance: %+v; want completed, started %s", p.Instances, now.Add(-5*time.Hour))
	}
	for _, bad := range []string{"?state=paused", "?order=sideways", "?limit=0", "?limit=1001", "?limit=x"} {
		if status, body := c.do(http.MethodGet, "/api/sagas/checkout/instances"+bad, "", nil); status != http.StatusBadRequest {
			t.Errorf("GET %s: %d %s; want 400", bad, status, body)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if status, body := c.do(http.MethodGet, "/api/sagas/checkout/instances", "", nil); status != http.StatusBadGateway || !strings.Contains(body, "error") {
		t.Errorf("GET with the database closed: %d %s; want 502 with the error", status, body)
	}
}

// Without --saga-dsn the console has no saga to list.
func TestSagaInstancesWithoutSagas(t *testing.T) {
	t.Parallel()
	c := newConsole(t, nil)
	if status, body := c.do(http.MethodGet, "/api/sagas/checkout/instances", "", nil); status != http.StatusNotFound {
		t.Errorf("GET without sagas: %d %s; want 404", status, body)
	}
}
