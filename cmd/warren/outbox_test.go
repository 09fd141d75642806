package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// outboxFile makes an SQLite outbox with three rows: one pending, one
// pending after a refusal, one failed; it returns the --dsn and the ids.
func outboxFile(t *testing.T) (dsn string, ids []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, ob := openSQLiteOutbox(t, path)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id, err := ob.Write(ctx, tx, runtime.Fact{RoutingKey: "parcel.sent"}, map[string]int{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE warren_outbox SET attempts = 1, last_error = 'broker refused the message' WHERE id = ?`,
		`UPDATE warren_outbox SET attempts = 20, failed_at = 1, last_error = 'outbox: message x:
broker refused the message' WHERE id = ?`,
	} {
		id := ids[1]
		if strings.Contains(q, "failed_at") {
			id = ids[2]
		}
		if _, err := db.Exec(q, id); err != nil {
			t.Fatal(err)
		}
	}
	return "sqlite:" + path, ids
}

func TestOutboxStatusRetryDiscard(t *testing.T) {
	dsn, ids := outboxFile(t)
	code, out, errOut := run(t, "outbox", "status", "--dsn", dsn)
	if code != 0 || !regexp.MustCompile(`warren_outbox\s+2\s+1\s+\d+s\s+1\s+0\s+0`).MatchString(out) {
		t.Errorf("status = %d, %q, %q; want 2 pending (1 retrying), an age, 1 failed", code, out, errOut)
	}
	if code, _, errOut := run(t, "outbox", "status", "--dsn", dsn, "--fail-on-failed"); code != 1 || !strings.Contains(errOut, "1 failed rows") {
		t.Errorf("status --fail-on-failed = %d, %q; want exit 1 naming the failed row", code, errOut)
	}
	code, out, _ = run(t, "outbox", "failed", "--dsn", dsn)
	if code != 0 || !strings.Contains(out, ids[2]) || !strings.Contains(out, "outbox: message x: broker refused the message") || strings.Contains(out, ids[0]) {
		t.Errorf("failed = %d, %q; want the failed row alone, its error on one line", code, out)
	}
	if code, _, errOut := run(t, "outbox", "retry", "--dsn", dsn, "--reason", "limit raised"); code != 2 || !strings.Contains(errOut, "expected --all or the ids") {
		t.Errorf("retry with neither --all nor ids = %d, %q; want a usage error", code, errOut)
	}
	if code, _, errOut := run(t, "outbox", "retry", "--dsn", dsn, "--reason", "limit raised", "row-7"); code != 2 || !strings.Contains(errOut, `"row-7" is not an id of failed rows: expected a UUID`) {
		t.Errorf("retry of an id that is no UUID = %d, %q; want a usage error naming it", code, errOut)
	}
	if code, _, errOut := run(t, "outbox", "retry", "--dsn", dsn, "--all"); code != 2 || !strings.Contains(errOut, "reason") {
		t.Errorf("retry without --reason = %d, %q; want a usage error", code, errOut)
	}
	if code, out, errOut := run(t, "outbox", "retry", "--dsn", dsn, "--reason", "limit raised", "--all"); code != 0 || out != "retried 1 failed rows of warren_outbox\n" {
		t.Errorf("retry --all = %d, %q, %q", code, out, errOut)
	}
	if code, out, _ := run(t, "outbox", "status", "--dsn", dsn); code != 0 || !regexp.MustCompile(`warren_outbox\s+3\s+1\s+\d+s\s+0\s+0\s+0`).MatchString(out) {
		t.Errorf("status after retry = %d, %q; want 3 pending, none failed", code, out)
	}
	// An id that is not a failed row is left alone, and named: exit 1.
	if code, out, errOut := run(t, "outbox", "discard", "--dsn", dsn, "--reason", "not failed", ids[0]); code != 1 || out != "discarded 0 failed rows of warren_outbox\n" ||
		!strings.Contains(errOut, "warren outbox discard: not failed rows") || !strings.Contains(errOut, ids[0]) {
		t.Errorf("discard of a pending row = %d, %q, %q; want it left alone and named", code, out, errOut)
	}
}

func TestOutboxBadDSN(t *testing.T) {
	code, _, errOut := run(t, "outbox", "status", "--dsn", "mysql://root:s3cr3t@db/shop")
	if code != 2 || !strings.Contains(errOut, "expected postgres://") || strings.Contains(errOut, "s3cr3t") {
		t.Errorf("status with a mysql DSN = %d, %q; want a usage error without the password", code, errOut)
	}
	// PostgreSQL's key/value form is not taken, and its password not shown.
	code, _, errOut = run(t, "outbox", "status", "--dsn", "host=127.0.0.1 user=postgres password=s3cr3t dbname=x")
	if code != 2 || !strings.Contains(errOut, "expected postgres://") || strings.Contains(errOut, "s3cr3t") {
		t.Errorf("status with a key/value DSN = %d, %q; want a usage error without the password", code, errOut)
	}
	code, _, errOut = run(t, "outbox", "status", "--dsn", "postgres://postgres:s3cr3t@127.0.0.1:1/test?connect_timeout=2")
	if code != 1 || strings.Contains(errOut, "s3cr3t") || !strings.Contains(errOut, "warren outbox status") {
		t.Errorf("status against no server = %d, %q; want an error without the password", code, errOut)
	}
}

// TestOutboxScheduledAndCancel: facts written for later are counted by
// status with their next due time, listed soonest first by scheduled
// (filtered by routing key), and cancel deletes the one named, exiting 1
// and naming the ids that were not waiting.
func TestOutboxScheduledAndCancel(t *testing.T) {
	dsn, ids := outboxFile(t)
	db, ob := openSQLiteOutbox(t, strings.TrimPrefix(dsn, "sqlite:"))
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	soon, err := ob.In(time.Hour).Write(ctx, tx, runtime.Fact{RoutingKey: "parcel.reminder"}, map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	late, err := ob.In(48*time.Hour).Write(ctx, tx, runtime.Fact{RoutingKey: "parcel.expired"}, map[string]int{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := run(t, "outbox", "status", "--dsn", dsn)
	if code != 0 || !regexp.MustCompile(`warren_outbox\s+2\s+1\s+\d+s\s+1\s+0\s+0\s+2\s+\S+Z \(in (59m5\ds|1h0m0s)\)`).MatchString(out) {
		t.Errorf("status = %d, %q, %q; want 2 pending as before, 2 scheduled, the next due in an hour", code, out, errOut)
	}
	code, out, _ = run(t, "outbox", "scheduled", "--dsn", dsn)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], soon+"  parcel.reminder") || !strings.HasPrefix(lines[2], late+"  parcel.expired") {
		t.Errorf("scheduled = %d, %q; want the reminder, then the expiry", code, out)
	}
	if code, out, _ := run(t, "outbox", "scheduled", "--dsn", dsn, "--routing-key", "parcel.expired"); code != 0 || strings.Contains(out, soon) || !strings.Contains(out, late) {
		t.Errorf("scheduled --routing-key parcel.expired = %d, %q; want the expiry alone", code, out)
	}
	if code, _, errOut := run(t, "outbox", "cancel", "--dsn", dsn, "tomorrow"); code != 2 || !strings.Contains(errOut, `"tomorrow" is not an id of scheduled facts: expected a UUID`) {
		t.Errorf("cancel of an id that is no UUID = %d, %q; want a usage error naming it", code, errOut)
	}
	if code, _, errOut := run(t, "outbox", "cancel", "--dsn", dsn); code != 2 || !strings.Contains(errOut, "expected the ids") {
		t.Errorf("cancel without ids = %d, %q; want a usage error", code, errOut)
	}
	code, out, errOut = run(t, "outbox", "cancel", "--dsn", dsn, late, ids[0])
	if code != 1 || out != "cancelled 1 scheduled facts of warren_outbox\n" || !strings.Contains(errOut, "not waiting") || !strings.Contains(errOut, ids[0]) || strings.Contains(errOut, late) {
		t.Errorf("cancel of a scheduled and an unscheduled fact = %d, %q, %q; want 1 cancelled, the other named", code, out, errOut)
	}
	if code, out, _ := run(t, "outbox", "scheduled", "--dsn", dsn); code != 0 || strings.Contains(out, late) || !strings.Contains(out, soon) {
		t.Errorf("scheduled after cancel = %d, %q; want the reminder alone", code, out)
	}
}

// openSQLiteOutbox opens the SQLite file at path and its outbox table,
// made if need be; the database is closed when the test ends.
func openSQLiteOutbox(t *testing.T, path string) (*sql.DB, *outbox.Outbox) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ob, err := outbox.New(outbox.Config{Dialect: outbox.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db, ob
}
