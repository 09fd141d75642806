package idempotency

import (
	"context"
	"embed"
	"fmt"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// migrations holds the scripts that create the claims table, one directory
// per dialect, applied in file-name order. Every script is idempotent
// (IF NOT EXISTS), so applying them again is harmless.
//
//go:embed migrations
var migrations embed.FS

// claims is the kind of the claims table. Its names are at most 48 bytes,
// which keeps the index's name ("<table>_claimed_at_idx") within
// PostgreSQL's 63-byte identifier limit.
var claims = sqldb.Kind{
	Name:       "idempotency",
	Migrations: migrations,
	MaxName:    48,
	Vars: func(t sqldb.Table) map[string]string {
		return map[string]string{"index": sqldb.Quote(t.Derived("_claimed_at_idx")), "parked": parkedTable(t).Quoted()}
	},
}

// parkedTable is the table of parked ordering keys beside claims table t.
func parkedTable(t sqldb.Table) sqldb.Table { return t.Sibling("_parked") }

// MigrationSQL returns the script that creates the claims table named table
// for dialect d, for teams that apply schema changes with their own migration
// tool. [SQLGuard.Migrate] applies the same script.
func MigrationSQL(d Dialect, table string) (string, error) {
	script, err := claims.SQL(d, table)
	if err != nil {
		return "", fmt.Errorf("idempotency: migration: %w", err)
	}
	return script, nil
}

// Migrate creates the claims table and its index if they do not exist yet,
// in one transaction ([sqldb.Migrate]). On PostgreSQL it first takes a
// transaction-scoped advisory lock on the table name, so services starting
// at the same moment do not race each other's CREATE TABLE (IF NOT EXISTS
// alone can fail with a unique violation in the catalogue); on SQLite the
// write lock does that.
func (g *SQLGuard) Migrate(ctx context.Context) error {
	if err := sqldb.Migrate(ctx, g.db, g.dialect, g.table); err != nil {
		return fmt.Errorf("idempotency: %w", err)
	}
	return nil
}
