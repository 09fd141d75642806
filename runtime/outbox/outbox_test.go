package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

func TestTableNames(t *testing.T) {
	for _, c := range []struct {
		dialect outbox.Dialect
		table   string
		wantErr string // "" when the name is accepted
	}{
		{outbox.Postgres, "warren_outbox", ""},
		{outbox.Postgres, "_outbox2", ""},
		{outbox.Postgres, "events.outbox", ""},
		{outbox.SQLite, "outbox", ""},
		{outbox.SQLite, "main.outbox", "does not take a schema-qualified name"},
		{outbox.Postgres, "Outbox", "expected lower-case letters"},
		{outbox.Postgres, `outbox"; DROP TABLE orders; --`, "expected lower-case letters"},
		{outbox.Postgres, "outbox-1", "expected lower-case letters"},
		{outbox.Postgres, "1outbox", "expected lower-case letters"},
		{outbox.Postgres, "a.b.c", "expected lower-case letters"},
		{outbox.Postgres, ".outbox", "expected lower-case letters"},
		{outbox.Postgres, strings.Repeat("x", 64), "longer than 63"},
		{"mysql", "outbox", `dialect "mysql": expected outbox.Postgres or outbox.SQLite`},
	} {
		_, err := outbox.MigrationSQL(c.dialect, c.table)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("MigrationSQL(%s, %q): %v", c.dialect, c.table, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("MigrationSQL(%s, %q) error = %v, want one saying %q", c.dialect, c.table, err, c.wantErr)
		}
	}
}

func TestMigrationSQLQuotesNames(t *testing.T) {
	got, err := outbox.MigrationSQL(outbox.Postgres, "events.outbox")
	if err != nil {
		t.Fatal(err)
	}
	if want := `CREATE TABLE IF NOT EXISTS "events"."outbox" (`; !strings.Contains(got, want) {
		t.Errorf("migration lacks %q:\n%s", want, got)
	}
	if strings.Contains(got, "{{") {
		t.Errorf("migration has an unfilled placeholder:\n%s", got)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := outbox.New(outbox.Config{}); err == nil || !strings.Contains(err.Error(), "no dialect") {
		t.Errorf("New without a dialect: error = %v, want one saying no dialect", err)
	}
	ob, err := outbox.New(outbox.Config{Dialect: outbox.SQLite})
	if err != nil || ob.Table() != outbox.DefaultTable {
		t.Errorf("New with defaults = table %q, %v; want %q", ob.Table(), err, outbox.DefaultTable)
	}
	s := newSQLiteStore(t)
	pub := &runtime.Publisher{} // never used: every case fails before publishing
	for _, c := range []struct {
		name    string
		cfg     outbox.RelayConfig
		wantErr string
	}{
		{"no dialect", outbox.RelayConfig{}, "no dialect"},
		{"bad table", outbox.RelayConfig{Dialect: outbox.SQLite, Table: "x y"}, `table "x y"`},
		{"negative batch", outbox.RelayConfig{Dialect: outbox.SQLite, BatchSize: -1}, "BatchSize -1"},
		{"retry range", outbox.RelayConfig{Dialect: outbox.SQLite, RetryMin: time.Minute, RetryMax: time.Second}, "RetryMin 1m0s, RetryMax 1s"},
		{"negative poll", outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: -time.Second}, "PollInterval"},
	} {
		if _, err := outbox.NewRelay(s.db, pub, c.cfg); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: NewRelay error = %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
	if _, err := outbox.NewRelay(nil, pub, outbox.RelayConfig{Dialect: outbox.SQLite}); err == nil {
		t.Error("NewRelay accepted a nil *sql.DB")
	}
	if _, err := outbox.NewRelay(s.db, nil, outbox.RelayConfig{Dialect: outbox.SQLite}); err == nil {
		t.Error("NewRelay accepted a nil publisher")
	}
}

// TestWriteStoresTheEnvelope: the row holds the id Write returned, the
// routing key and version, and the envelope with exactly the payload.
func TestWriteStoresTheEnvelope(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ids := s.write(factPlaced, order{ID: "o-1", Total: 1250})
		rows := s.rows()
		if len(rows) != 1 {
			t.Fatalf("outbox has %d rows, want 1", len(rows))
		}
		r := rows[0]
		if r.ID != ids[0] || r.RoutingKey != "order.placed" || r.Version != 2 || r.Attempts != 0 || r.LastError.Valid {
			t.Errorf("row = %+v; want id %s, order.placed, version 2, no attempts", r, ids[0])
		}
		var env runtime.Envelope
		if err := json.Unmarshal(r.Envelope, &env); err != nil {
			t.Fatal(err)
		}
		if env.ID != ids[0] || env.OccurredAt.IsZero() || string(env.Payload) != `{"id":"o-1","total":1250}` {
			t.Errorf("envelope = %s; want id %s, a time and the payload", r.Envelope, ids[0])
		}
	})
}

// TestInvalidPayloadWritesNothing: a payload that fails its schema, or does
// not encode, is an error; nothing is written and the caller's transaction
// can still commit its own work.
func TestInvalidPayloadWritesNothing(t *testing.T) {
	errTotal := errors.New("/total: must be >= 0")
	strict := runtime.Fact{RoutingKey: "order.placed", Validate: func(payload []byte) error {
		var o order
		if err := json.Unmarshal(payload, &o); err != nil {
			return err
		}
		if o.Total < 0 {
			return errTotal
		}
		return nil
	}}
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		work := testenv.TableName("orders")
		if _, err := s.db.Exec(`CREATE TABLE "` + work + `" (id TEXT)`); err != nil {
			t.Fatal(err)
		}
		testenv.DropTable(t, s.db, work)
		tx := s.begin(ctx)
		defer tx.Rollback(ctx) //nolint:errcheck
		for _, c := range []struct {
			name    string
			f       runtime.Fact
			payload any
			want    string
		}{
			{"schema", strict, order{ID: "o-1", Total: -5}, "payload does not match its schema: /total: must be >= 0"},
			{"not JSON", strict, func() {}, "encode payload"},
			{"no routing key", runtime.Fact{}, order{ID: "o-1"}, "no routing key"},
		} {
			id, err := s.ob.Write(ctx, execer(tx), c.f, c.payload)
			if err == nil || id != "" || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: Write = %q, %v; want an error saying %q", c.name, id, err, c.want)
			}
		}
		if _, err := s.ob.Write(ctx, execer(tx), strict, order{ID: "o-1", Total: -5}); !errors.Is(err, errTotal) {
			t.Errorf("Write error %v does not wrap the validator's error", err)
		}
		if _, err := s.ob.Write(ctx, nil, strict, order{ID: "o-1"}); err == nil || !strings.Contains(err.Error(), "nil transaction") {
			t.Errorf("Write without a transaction: error = %v", err)
		}
		var noTx *sql.Tx
		if _, err := s.ob.Write(ctx, noTx, strict, order{ID: "o-1"}); err == nil || !strings.Contains(err.Error(), "nil transaction") {
			t.Errorf("Write with a nil *sql.Tx: error = %v", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO "`+work+`" (id) VALUES ('o-1')`); err != nil {
			t.Fatalf("the transaction is unusable after a refused Write: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if rows := s.rows(); len(rows) != 0 {
			t.Errorf("outbox has %d rows after refused writes, want none: %+v", len(rows), rows)
		}
	})
}

// TestMigrateTwice: applying the migration again keeps the rows.
func TestMigrateTwice(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		s.write(factPlaced, order{ID: "o-1"})
		if err := s.ob.MigrateDB(context.Background(), s.txDB); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		if n := len(s.rows()); n != 1 {
			t.Errorf("after a second Migrate the outbox has %d rows, want 1", n)
		}
	})
}

// TestStoreUnreachable: a relay whose database is gone reports a store
// error from RelayOnce, and Run keeps going until cancelled.
func TestStoreUnreachable(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	db.Close()
	r, err := outbox.NewRelay(db, &runtime.Publisher{}, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.RelayOnce(context.Background())
	if n != 0 || err == nil || !strings.Contains(err.Error(), "database is closed") {
		t.Errorf("RelayOnce on a closed database = %d, %v; want 0 and the database's error", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run on a closed database returned %v; want it to keep trying until ctx ends, then nil", err)
	}
}
