package saga_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// newSQLiteStore makes and migrates a Store on the SQLite database db, with
// cfg's other settings and a guard and an outbox of the default tables.
func newSQLiteStore(t *testing.T, db *sql.DB, cfg saga.Config) *saga.Store {
	t.Helper()
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: sqldb.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{Dialect: sqldb.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dialect, cfg.Guard, cfg.Outbox = sqldb.SQLite, guard, ob
	store, err := saga.NewStore(sqldb.FromSQL(db), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store
}

// Prune deletes the instances completed longer ago than the window, and
// keeps running ones and those completed since.
func TestPruneDeletesOnlyOldCompletedInstances(t *testing.T) {
	ctx := context.Background()
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "sagas.db"))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	store := newSQLiteStore(t, db, saga.Config{Now: func() time.Time { return now }})
	ms := func(d time.Duration) any { return now.Add(-d).UnixMilli() }
	for _, r := range [][]any{
		{"checkout", "old", ms(3 * time.Hour)},
		{"checkout", "recent", ms(30 * time.Minute)},
		{"checkout", "running", nil},
		{"refund", "old", ms(3 * time.Hour)},
	} {
		if _, err := db.Exec(`INSERT INTO warren_saga_instances (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES (?, ?, 1, '{}', '{}', ?, 0, 0)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := saga.NewAdmin(sqldb.FromSQL(db), sqldb.SQLite, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := admin.Summaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].Saga != "checkout" || sums[0].Running != 1 || sums[0].Completed != 2 || sums[0].OldestRunning.UnixMilli() != 0 ||
		sums[1].Saga != "refund" || sums[1].Running != 0 || !sums[1].OldestRunning.IsZero() {
		t.Errorf("summaries %+v; want checkout 1 running (since 0) and 2 completed, refund 1 completed", sums)
	}
	n, err := store.Prune(ctx, "checkout", time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want the old completed checkout alone", n, err)
	}
	rows, err := admin.List(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range rows {
		left = append(left, r.Saga+"/"+r.Instance)
	}
	want := map[string]bool{"checkout/running": true, "checkout/recent": true, "refund/old": true}
	if len(left) != len(want) {
		t.Fatalf("left %v; want %v", left, want)
	}
	for _, l := range left {
		if !want[l] {
			t.Errorf("left %v; want %v", left, want)
		}
	}
}
