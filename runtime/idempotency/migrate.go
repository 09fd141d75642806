package idempotency

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/internal/sqltable"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// migrations holds the scripts that create the claims table, one directory
// per dialect, applied in file-name order. Every script is idempotent
// (IF NOT EXISTS), so applying them again is harmless.
//
//go:embed migrations
var migrations embed.FS

// MigrationSQL returns the script that creates the claims table named table
// for dialect d, for teams that apply schema changes with their own migration
// tool. [SQLGuard.Migrate] applies the same script.
func MigrationSQL(d Dialect, table string) (string, error) {
	t, err := parseTable(d, table)
	if err != nil {
		return "", fmt.Errorf("idempotency: migration: %w", err)
	}
	impl, _ := lookup(d) // checked by parseTable
	scripts, err := renderMigrations(impl, t)
	if err != nil {
		return "", err
	}
	return strings.Join(scripts, "\n"), nil
}

// renderMigrations returns the dialect's scripts in order, with the table
// and index names filled in.
func renderMigrations(d dialect, t sqltable.Name) ([]string, error) {
	scripts, err := sqltable.Scripts(migrations, d.migrations, map[string]string{"table": t.Quoted(), "index": indexName(t)})
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	return scripts, nil
}

// Migrate creates the claims table and its index if they do not exist yet,
// in one transaction. On PostgreSQL it first takes a transaction-scoped
// advisory lock on the table name, so services starting at the same moment
// do not race each other's CREATE TABLE (IF NOT EXISTS alone can fail with
// a unique violation in the catalogue); on SQLite the write lock does that.
func (g *SQLGuard) Migrate(ctx context.Context) error {
	scripts, err := renderMigrations(g.dialect, g.table)
	if err != nil {
		return err
	}
	tx, err := g.begin(ctx, sqldb.TxOptions{})
	if err != nil {
		return fmt.Errorf("idempotency: migrate %s: %w", g.table, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := sqltable.Migrate(ctx, tx, g.dialect.migrateLock, "warren.idempotency."+g.table.String(), scripts, nil); err != nil {
		return fmt.Errorf("idempotency: migrate %s: %w", g.table, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idempotency: migrate %s: commit: %w", g.table, err)
	}
	return nil
}

// begin opens a transaction and runs the dialect's per-transaction setup.
func (g *SQLGuard) begin(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	tx, err := g.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	for _, stmt := range g.setup {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return tx, nil
}
