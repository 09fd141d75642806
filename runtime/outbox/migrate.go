package outbox

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
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
	impl, _ := d.impl() // checked by parseTable
	scripts, err := renderMigrations(impl, t)
	if err != nil {
		return "", err
	}
	return strings.Join(scripts, "\n"), nil
}

// renderMigrations returns the dialect's scripts in order, with the table
// name filled in.
func renderMigrations(d dialect, t tableName) ([]string, error) {
	entries, err := fs.ReadDir(migrations, d.migrations)
	if err != nil {
		return nil, fmt.Errorf("outbox: migrations in %s: %w", d.migrations, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	r := strings.NewReplacer("{{table}}", t.quoted())
	scripts := make([]string, 0, len(names))
	for _, name := range names {
		b, err := migrations.ReadFile(path.Join(d.migrations, name))
		if err != nil {
			return nil, fmt.Errorf("outbox: migration %s: %w", name, err)
		}
		scripts = append(scripts, r.Replace(string(b)))
	}
	return scripts, nil
}

// Migrate creates the outbox table in db if it does not exist yet, in one
// transaction. On PostgreSQL it first takes a transaction-scoped advisory
// lock on the table name, so services starting at the same moment do not
// race each other's CREATE TABLE (IF NOT EXISTS alone can fail with a
// unique violation in the catalogue); on SQLite the write lock does that.
func (o *Outbox) Migrate(ctx context.Context, db *sql.DB) error {
	scripts, err := renderMigrations(o.dialect, o.table)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("outbox: migrate %s: begin: %w", o.table, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if lock := o.dialect.migrateLock; lock != "" {
		if _, err := tx.ExecContext(ctx, lock, "warren.outbox."+o.table.String()); err != nil {
			return fmt.Errorf("outbox: migrate %s: lock: %w", o.table, err)
		}
	}
	for _, script := range scripts {
		if _, err := tx.ExecContext(ctx, script); err != nil {
			return fmt.Errorf("outbox: migrate %s: %w", o.table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("outbox: migrate %s: commit: %w", o.table, err)
	}
	return nil
}
