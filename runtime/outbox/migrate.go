package outbox

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// migrations holds the scripts that create the outbox table, one directory
// per dialect, applied in file-name order. Every script is idempotent
// (IF NOT EXISTS, or on SQLite a column added by a script of its own), so
// applying them again is harmless.
//
//go:embed migrations
var migrations embed.FS

// kind is the kind of the outbox table. Its names take PostgreSQL's
// 63-byte limit: the names derived from them are shortened to fit.
var kind = sqldb.Kind{
	Name:       "outbox",
	Migrations: migrations,
	Vars: func(t sqldb.Table) map[string]string {
		return map[string]string{
			// Dropped by name, so qualified: the index is in the table's schema.
			"pending_index":  t.Sibling("_pending_idx").Quoted(),
			"ready_index":    sqldb.Quote(t.Derived("_ready_idx")),
			"schedule_index": sqldb.Quote(t.Derived("_due_idx")),
			"key_index":      sqldb.Quote(t.Derived("_key_idx")),
			"seq_table":      seqTable(t).Quoted(),
			"source_table":   sourceTable(t).Quoted(),
		}
	},
}

// seqTable is the table of per-key counters (see ordering.go), beside the
// outbox table t, in its schema.
func seqTable(t sqldb.Table) sqldb.Table { return t.Sibling("_seq") }

// sourceTable is the one-row table beside the outbox table t that holds
// the id of its numbering (see ordering.go).
func sourceTable(t sqldb.Table) sqldb.Table { return t.Sibling("_seq_source") }

// MigrationSQL returns the script that creates the outbox table named table
// for dialect d, for teams that apply schema changes with their own
// migration tool. [Outbox.Migrate] applies the same script.
func MigrationSQL(d Dialect, table string) (string, error) {
	script, err := kind.SQL(d, table)
	if err != nil {
		return "", fmt.Errorf("outbox: migration: %w", err)
	}
	return script, nil
}

// Migrate creates the outbox table in db if it does not exist yet, or
// brings it up to date, in one transaction ([sqldb.Migrate]). On PostgreSQL
// it first takes a transaction-scoped advisory lock on the table name, so
// services starting at the same moment do not race each other's CREATE
// TABLE (IF NOT EXISTS alone can fail with a unique violation in the
// catalogue); on SQLite the write lock does that.
func (o *Outbox) Migrate(ctx context.Context, db *sql.DB) error {
	return o.MigrateDB(ctx, sqldb.FromSQL(db))
}

// MigrateDB is [Outbox.Migrate] over any [sqldb.DB], such as
// pgxdb.FromPool(pool).
func (o *Outbox) MigrateDB(ctx context.Context, db sqldb.DB) error {
	if err := sqldb.Migrate(ctx, db, o.d.Dialect, o.table); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}
