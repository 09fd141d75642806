package outbox

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/internal/sqltable"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// migrations holds the scripts that create the outbox table, one directory
// per dialect, applied in file-name order. Every script is idempotent
// (IF NOT EXISTS), so applying them again is harmless.
//
//go:embed migrations
var migrations embed.FS

// MigrationSQL returns the script that creates the outbox table named table
// for dialect d, for teams that apply schema changes with their own
// migration tool. [Outbox.Migrate] applies the same script.
func MigrationSQL(d Dialect, table string) (string, error) {
	t, err := parseTable(d, table)
	if err != nil {
		return "", fmt.Errorf("outbox: migration: %w", err)
	}
	impl, _ := lookup(d) // checked by parseTable
	scripts, err := renderMigrations(impl, t)
	if err != nil {
		return "", err
	}
	return strings.Join(scripts, "\n"), nil
}

// renderMigrations returns the dialect's scripts in order, with the table
// name filled in.
func renderMigrations(d dialect, t sqltable.Name) ([]string, error) {
	scripts, err := sqltable.Scripts(migrations, d.migrations, map[string]string{"table": t.Quoted(), "pending_index": pendingIndex(t), "seq_table": seqTable(t)})
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return scripts, nil
}

// Migrate creates the outbox table in db if it does not exist yet, in one
// transaction. On PostgreSQL it first takes a transaction-scoped advisory
// lock on the table name, so services starting at the same moment do not
// race each other's CREATE TABLE (IF NOT EXISTS alone can fail with a
// unique violation in the catalogue); on SQLite the write lock does that.
func (o *Outbox) Migrate(ctx context.Context, db *sql.DB) error {
	return o.MigrateDB(ctx, sqldb.FromSQL(db))
}

// MigrateDB is [Outbox.Migrate] over any [sqldb.DB], such as
// pgxdb.FromPool(pool).
func (o *Outbox) MigrateDB(ctx context.Context, db sqldb.DB) error {
	scripts, err := renderMigrations(o.d, o.table)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return fmt.Errorf("outbox: migrate %s: begin: %w", o.table, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := sqltable.Migrate(ctx, tx, o.d.migrateLock, "warren.outbox."+o.table.String(), scripts, o.d.applied); err != nil {
		return fmt.Errorf("outbox: migrate %s: %w", o.table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("outbox: migrate %s: commit: %w", o.table, err)
	}
	return nil
}
