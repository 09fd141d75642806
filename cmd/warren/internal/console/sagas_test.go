package console

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
	"github.com/warrenbus/warren/runtime/topology"
)

// The overview shows each saga's instances from the instances table: how
// many run, since when the oldest, how many wait on a timeout, how many
// completed; a failed reading keeps the last figures, with the error.
func TestOverviewShowsSagas(t *testing.T) {
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
	store, err := saga.NewStore(sqldb.FromSQL(db), saga.Config{Dialect: sqldb.SQLite, Guard: guard, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	for _, r := range [][]any{
		{"o-1", `{"payment-due":"m-1"}`, nil, started.UnixMilli()},
		{"o-2", `{}`, nil, started.Add(time.Minute).UnixMilli()},
		{"o-3", `{}`, time.Now().UnixMilli(), started.UnixMilli()},
	} {
		if _, err := db.Exec(`INSERT INTO warren_saga_instances (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES ('checkout', ?, 1, '{}', ?, ?, ?, 0)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := saga.NewAdmin(sqldb.FromSQL(db), sqldb.SQLite, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newConsoleOf(t, topology.Spec{}, func(cfg *Config) { cfg.Sagas = admin })
	var o overviewJSON
	testenv.Eventually(t, "the sagas' figures", func() bool {
		c.getJSON("/api/overview", &o)
		return o.Sagas != nil && len(o.Sagas.Sagas) == 1
	})
	g := o.Sagas.Sagas[0]
	if o.Sagas.Table != saga.DefaultTable || g.Saga != "checkout" || g.Running != 2 || g.Completed != 1 || g.WithTimeouts != 1 || g.OldestRunning == nil || !g.OldestRunning.Equal(started) {
		t.Errorf("sagas = %+v, %+v; want checkout: 2 running since %s, 1 waiting on a timeout, 1 completed", o.Sagas, g, started)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the sagas' failed reading", func() bool {
		c.getJSON("/api/overview", &o)
		return o.Sagas != nil && o.Sagas.Error != ""
	})
	if len(o.Sagas.Sagas) != 1 || o.Sagas.Sagas[0].Running != 2 {
		t.Errorf("after a failed reading the sagas' last figures are gone: %+v", o.Sagas)
	}
}
