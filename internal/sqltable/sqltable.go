// Package sqltable names and creates the tables warren keeps in a user's
// database (idempotency claims, the outbox): it validates a configured
// table name so that it can be spliced into SQL, quotes it, and applies the
// embedded migration scripts that create the table.
package sqltable

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Execer runs a statement: a transaction of database/sql or pgx
// (sqldb.Execer, repeated here so that this package imports no runtime
// package).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Name is a validated table name, possibly schema-qualified.
type Name struct {
	Schema string // "" when unqualified
	Table  string
}

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Parse checks that name is a safe table name: lower-case letters, digits
// and underscores, optionally "schema.table" when qualified is true, each
// part at most maxLen bytes. Only lower-case names are accepted: quoted,
// they mean exactly what an unquoted name in a hand-written query means, so
// nobody is surprised by case folding. dialect names the database in the
// error for a qualified name it does not take.
func Parse(name, dialect string, qualified bool, maxLen int) (Name, error) {
	schema, table, isQualified := strings.Cut(name, ".")
	parts := []string{schema, table}
	if !isQualified {
		schema, table, parts = "", name, []string{name}
	} else if !qualified {
		return Name{}, fmt.Errorf("table %q: %s does not take a schema-qualified name", name, dialect)
	}
	for _, part := range parts {
		if !identifier.MatchString(part) {
			return Name{}, fmt.Errorf("table %q: expected lower-case letters, digits and underscores, starting with a letter or underscore (optionally schema.table on PostgreSQL)", name)
		}
		if len(part) > maxLen {
			return Name{}, fmt.Errorf("table %q: a name is longer than %d characters", name, maxLen)
		}
	}
	return Name{Schema: schema, Table: table}, nil
}

// Quoted renders the name as a quoted SQL identifier.
func (n Name) Quoted() string {
	if n.Schema == "" {
		return Quote(n.Table)
	}
	return Quote(n.Schema) + "." + Quote(n.Table)
}

func (n Name) String() string {
	if n.Schema == "" {
		return n.Table
	}
	return n.Schema + "." + n.Table
}

// Quote quotes an identifier. It is safe only for identifiers that Parse
// admitted, or that are made of them: those hold no quote characters.
func Quote(ident string) string { return `"` + ident + `"` }

// Scripts returns the *.sql files of dir in fsys in file-name order, with
// every {{key}} of vars replaced by its value.
func Scripts(fsys fs.FS, dir string, vars map[string]string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations in %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var pairs []string
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	r := strings.NewReplacer(pairs...)
	scripts := make([]string, 0, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		scripts = append(scripts, r.Replace(string(b)))
	}
	return scripts, nil
}

// Migrate runs scripts in tx, which the caller commits. When lock is not
// empty it runs first, with lockKey as its one parameter: on PostgreSQL a
// transaction-scoped advisory lock, so that services starting at the same
// moment do not race each other's CREATE TABLE (IF NOT EXISTS alone can
// fail with a unique violation in the catalogue).
//
// Every script must be safe to run again. Where the database cannot say
// so in SQL (SQLite has no ADD COLUMN IF NOT EXISTS), a script is a single
// statement and applied(err) reports that its failure means it was applied
// before (the column exists); such a script is skipped. applied may be nil.
// Skipping needs a database whose failed statement leaves the transaction
// usable, as SQLite's does.
func Migrate(ctx context.Context, tx Execer, lock, lockKey string, scripts []string, applied func(error) bool) error {
	if lock != "" {
		if _, err := tx.ExecContext(ctx, lock, lockKey); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
	}
	for _, script := range scripts {
		if _, err := tx.ExecContext(ctx, script); err != nil {
			if applied != nil && applied(err) {
				continue
			}
			return err
		}
	}
	return nil
}

// maxIdentifier is PostgreSQL's identifier limit in bytes.
const maxIdentifier = 63

// Derived returns the quoted name of an object belonging to table t (an
// index, say): the table's name with suffix, shortened with a hash of the
// whole when it would pass the 63-byte identifier limit, so that two
// long table names never share it. It is never schema-qualified: an index
// lives in its table's schema.
func Derived(t Name, suffix string) string {
	name := t.Table + suffix
	if len(name) > maxIdentifier {
		h := fnv.New32a()
		h.Write([]byte(name))
		tag := fmt.Sprintf("_%08x", h.Sum32())
		name = t.Table[:maxIdentifier-len(suffix)-len(tag)] + tag + suffix
	}
	return Quote(name)
}
