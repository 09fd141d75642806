package idempotency

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dialect names the SQL flavour of a claims store: [Postgres] or [SQLite].
// What differs between them (placeholders, how a claim's time is stored,
// which migration applies, how a writer waits for another) lives behind it,
// so that [SQLGuard] itself is written once.
type Dialect string

// The dialects an [SQLGuard] speaks.
const (
	// Postgres is PostgreSQL, used through pgx's database/sql driver
	// (github.com/jackc/pgx/v5/stdlib). Claims are stamped as timestamptz.
	Postgres Dialect = "postgres"
	// SQLite is SQLite, used through the pure-Go driver modernc.org/sqlite.
	// Claims are stamped in Unix milliseconds (INTEGER), which compare
	// correctly whatever time format the driver is configured with.
	//
	// SQLite has one writer at a time: a claim's transaction holds the
	// database's write lock while the handler runs, so guarded handlers on
	// one SQLite file run one after another whatever the consumer's
	// concurrency. A claim waits up to [SQLConfig.BusyTimeout] for the
	// writer ahead of it; set in every transaction the guard opens, that
	// wait makes concurrent duplicate claims safe: the second claim runs
	// once the first transaction has ended and then sees its outcome. A
	// wait that runs out is a store error, so the consumer retries the
	// message later. See the package documentation for the other caveats.
	SQLite Dialect = "sqlite"
)

// dialect is what a [Dialect] does differently.
type dialect struct {
	// placeholder renders the n-th (1-based) statement parameter.
	placeholder func(n int) string
	// stamp converts a claim time into the value stored in claimed_at.
	stamp func(t time.Time) any
	// qualified reports whether a table name may carry a schema ("schema.table").
	qualified bool
	// migrations is the directory of the dialect's scripts inside [migrations].
	migrations string
	// txSetup returns statements run first in every transaction the guard
	// opens, given the configuration; nil when there are none.
	txSetup func(cfg SQLConfig) []string
	// migrateLock, taking the table name as its parameter, serialises
	// concurrent migrations; "" when the database does so by itself.
	migrateLock string
}

var dialects = map[Dialect]dialect{
	Postgres: {
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		stamp:       func(t time.Time) any { return t.UTC() },
		qualified:   true,
		migrations:  "migrations/postgres",
		migrateLock: "SELECT pg_advisory_xact_lock(hashtext($1))",
	},
	SQLite: {
		placeholder: func(int) string { return "?" },
		stamp:       func(t time.Time) any { return t.UnixMilli() },
		migrations:  "migrations/sqlite",
		txSetup: func(cfg SQLConfig) []string {
			return []string{fmt.Sprintf("PRAGMA busy_timeout = %d", cfg.BusyTimeout.Milliseconds())}
		},
	},
}

// String returns the dialect's name, "postgres" or "sqlite".
func (d Dialect) String() string { return string(d) }

// impl returns what d does, or an error naming the accepted dialects.
func (d Dialect) impl() (dialect, error) {
	impl, ok := dialects[d]
	if !ok {
		if d == "" {
			return dialect{}, errors.New("no dialect: expected idempotency.Postgres or idempotency.SQLite")
		}
		return dialect{}, fmt.Errorf("dialect %q: expected idempotency.Postgres or idempotency.SQLite", string(d))
	}
	return impl, nil
}

// maxTableName keeps the derived index name ("<table>_claimed_at_idx")
// within PostgreSQL's 63-byte identifier limit.
const maxTableName = 48

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// tableName is a validated table name, possibly schema-qualified, that can
// be spliced into SQL.
type tableName struct {
	schema, name string
}

// parseTable checks that table is a safe identifier for d. Only lower-case
// names are accepted: quoted, they mean exactly what an unquoted name in a
// hand-written query means, so nobody is surprised by case folding.
func parseTable(d Dialect, table string) (tableName, error) {
	impl, err := d.impl()
	if err != nil {
		return tableName{}, err
	}
	schema, name, qualified := strings.Cut(table, ".")
	parts := []string{schema, name}
	if !qualified {
		schema, name, parts = "", table, []string{table}
	} else if !impl.qualified {
		return tableName{}, fmt.Errorf("table %q: %s does not take a schema-qualified name", table, d)
	}
	for _, part := range parts {
		if !identifier.MatchString(part) {
			return tableName{}, fmt.Errorf("table %q: expected lower-case letters, digits and underscores, starting with a letter or underscore (optionally schema.table on PostgreSQL)", table)
		}
	}
	if len(name) > maxTableName {
		return tableName{}, fmt.Errorf("table %q: name is longer than %d characters", table, maxTableName)
	}
	return tableName{schema: schema, name: name}, nil
}

// quoted renders the table as a quoted SQL identifier.
func (t tableName) quoted() string {
	if t.schema == "" {
		return quote(t.name)
	}
	return quote(t.schema) + "." + quote(t.name)
}

// index is the quoted name of the index on claimed_at. An index lives in its
// table's schema, so its name is never qualified.
func (t tableName) index() string { return quote(t.name + "_claimed_at_idx") }

func (t tableName) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

// quote is safe because parseTable admits no quote characters.
func quote(ident string) string { return `"` + ident + `"` }
