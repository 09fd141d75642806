package sqldb

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Migrate creates tables in db, or brings them up to date, in one
// transaction: for each table in turn it runs the scripts of its [Kind]
// for dialect d. Every script is safe to run again (see
// [Kind.Migrations]), so migrating tables that are up to date changes
// nothing, and a migration that fails leaves every table as it was.
//
// On PostgreSQL it first takes a transaction-scoped advisory lock per
// table, keyed by its kind and name, so that services starting at the same
// moment do not race each other's CREATE TABLE (IF NOT EXISTS alone can
// fail with a unique violation in the catalogue); on SQLite the write lock
// does that. db's transactions may need a setup of their own, such as a
// busy timeout on SQLite: see [WithSetup].
func Migrate(ctx context.Context, db DB, d Dialect, tables ...Table) error {
	if err := d.Check("sqldb"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	f := d.flavour()
	names := make([]string, len(tables))
	keys := make([]string, len(tables))
	scripts := make([][]string, len(tables))
	for i, t := range tables {
		if t.kind == nil {
			return fmt.Errorf("migrate: table %q is of no kind: expected a table named by Kind.Table", t.String())
		}
		if t.schema != "" && !f.qualified {
			return fmt.Errorf("migrate %s: %s does not take a schema-qualified name", t, d)
		}
		s, err := t.scripts(d)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", t, err)
		}
		names[i], keys[i], scripts[i] = t.String(), "warren."+t.kind.Name+"."+t.String(), s
	}
	if len(tables) == 0 {
		return nil
	}
	all := strings.Join(names, ", ")
	tx, err := db.BeginTx(ctx, TxOptions{})
	if err != nil {
		return fmt.Errorf("migrate %s: begin: %w", all, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if f.migrateLock != "" {
		// In one order whatever the order of tables, so that two
		// migrations of the same tables never wait for each other's locks.
		slices.Sort(keys)
		for _, key := range slices.Compact(keys) {
			if _, err := tx.ExecContext(ctx, f.migrateLock, key); err != nil {
				return fmt.Errorf("migrate %s: lock: %w", all, err)
			}
		}
	}
	for i, t := range tables {
		for _, script := range scripts[i] {
			if _, err := tx.ExecContext(ctx, script); err != nil {
				// Skipping needs a database whose failed statement leaves
				// the transaction usable, as SQLite's does.
				if f.applied != nil && f.applied(err) {
					continue
				}
				return fmt.Errorf("migrate %s: %w", t, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate %s: commit: %w", all, err)
	}
	return nil
}
