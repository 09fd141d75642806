package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// sagaFile makes a SQLite file with two instances of saga checkout: o-1
// running, with its payment-due timeout scheduled in the outbox, and o-2
// completed. It returns the --dsn and the timeout's outbox id.
func sagaFile(t *testing.T) (dsn, timeoutID string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, ob := openSQLiteOutbox(t, path)
	ctx := context.Background()
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: sqldb.SQLite})
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
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	timeoutID, err = ob.In(time.Hour).Write(ctx, tx, saga.TimeoutFact("checkout"), map[string]string{"instance": "o-1", "timeout": "payment-due"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for _, r := range [][]any{
		{"o-1", 1, `{"status":"placed"}`, `{"payment-due":"` + timeoutID + `"}`, nil, now - 60_000},
		{"o-2", 3, `{"status":"paid"}`, `{}`, now, now - 120_000},
	} {
		if _, err := tx.Exec(`INSERT INTO warren_saga_instances (saga, instance, version, state, timeouts, completed_at, created_at, updated_at) VALUES ('checkout', ?, ?, ?, ?, ?, ?, ?)`, append(r, now)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path, timeoutID
}

func TestSagaListShowDelete(t *testing.T) {
	dsn, timeoutID := sagaFile(t)
	code, out, errOut := run(t, "saga", "list", "--dsn", dsn)
	if code != 0 {
		t.Fatalf("list: exit %d, %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SAGA") ||
		!strings.Contains(lines[1], "o-1") || !strings.Contains(lines[1], "running") || !strings.Contains(lines[1], "payment-due") ||
		!strings.Contains(lines[2], "o-2") || !strings.Contains(lines[2], "completed") {
		t.Errorf("list:\n%s\nwant o-1 running with payment-due pending, then o-2 completed", out)
	}
	code, out, errOut = run(t, "saga", "show", "--dsn", dsn, "checkout", "o-1")
	if code != 0 || !strings.Contains(out, `"status": "placed"`) || !strings.Contains(out, "timeout:   payment-due (outbox message "+timeoutID+")") {
		t.Errorf("show: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "saga", "show", "--dsn", dsn, "checkout", "o-9"); code != 1 || !strings.Contains(errOut, `no instance "o-9" of saga "checkout"`) {
		t.Errorf("show of a missing instance: exit %d, %s", code, errOut)
	}
	code, out, errOut = run(t, "saga", "delete", "--dsn", dsn, "checkout", "o-1")
	if code != 0 || !strings.Contains(out, `deleted instance "o-1"`) {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if _, out, _ := run(t, "outbox", "scheduled", "--dsn", dsn); strings.Contains(out, timeoutID) {
		t.Errorf("the deleted instance's timeout is still scheduled:\n%s", out)
	}
	if _, out, _ := run(t, "saga", "list", "--dsn", dsn); strings.Contains(out, "o-1") {
		t.Errorf("list after delete:\n%s", out)
	}
	if code, _, errOut := run(t, "saga", "delete", "--dsn", dsn, "checkout", "o-1"); code != 1 || !strings.Contains(errOut, "no instance") {
		t.Errorf("second delete: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run(t, "saga", "show", "--dsn", dsn, "checkout"); code == 0 || !strings.Contains(errOut, "expected SAGA INSTANCE") {
		t.Errorf("show without an instance: exit %d, %s", code, errOut)
	}
}
