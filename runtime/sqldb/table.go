package sqldb

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// Kind is a kind of table that warren keeps in a user's database: the
// idempotency guard's claims, the outbox, and the tables of whatever comes
// to need one. It holds what every table of the kind shares: the scripts
// that create and upgrade it in each dialect, and how long its name may
// be. A package declares its Kind once, names its tables with [Kind.Table]
// and creates them with [Migrate].
type Kind struct {
	// Name says what the tables hold, as the package that keeps them is
	// named ("idempotency", "outbox"). It keys the lock a table migrates
	// under, and an unknown dialect's error suggests that package's
	// constants.
	Name string
	// Migrations holds a directory migrations/<dialect> per dialect
	// (migrations/postgres, migrations/sqlite) of *.sql scripts, applied
	// in file-name order: what `//go:embed migrations` embeds of a
	// package's migrations directory. In a script {{table}} stands for
	// the quoted table name, and {{key}} for the value Vars gives key.
	//
	// Every script must be safe to run again, for every migration runs
	// them all: IF NOT EXISTS, where the dialect has it. SQLite has no ADD
	// COLUMN IF NOT EXISTS: there a script that adds a column is that one
	// statement alone, and it is skipped when the column exists.
	Migrations fs.FS
	// MaxName is the most bytes a table's name, or its schema, may have:
	// less than PostgreSQL's limit of 63 when a name made of it, such as
	// an index's, must fit too. Zero means 63.
	MaxName int
	// Vars returns the values of the placeholders other than {{table}} in
	// the scripts of table t, such as its indexes' quoted names (see
	// [Table.Derived]); nil when the scripts have none.
	Vars func(t Table) map[string]string
}

// Table is a table of a [Kind], named by [Kind.Table]: its name is made of
// lower-case letters, digits and underscores, optionally behind a schema,
// so it can be spliced into SQL. The zero Table is of no kind.
type Table struct {
	kind   *Kind
	schema string // "" when unqualified
	name   string
}

// maxIdentifier is PostgreSQL's identifier limit in bytes.
const maxIdentifier = 63

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Table returns the table of kind k named name in a database of dialect d,
// or an error saying why name is not safe: it must be lower-case letters,
// digits and underscores, optionally "schema.table" on PostgreSQL, each
// part at most [Kind.MaxName] bytes. Only lower-case names are accepted:
// quoted, they mean exactly what an unquoted name in a hand-written query
// means, so nobody is surprised by case folding.
func (k *Kind) Table(d Dialect, name string) (Table, error) {
	if err := d.Check(k.Name); err != nil {
		return Table{}, err
	}
	schema, table, isQualified := strings.Cut(name, ".")
	parts := []string{schema, table}
	if !isQualified {
		schema, table, parts = "", name, []string{name}
	} else if !d.flavour().qualified {
		return Table{}, fmt.Errorf("table %q: %s does not take a schema-qualified name", name, d)
	}
	maxLen := k.MaxName
	if maxLen == 0 {
		maxLen = maxIdentifier
	}
	for _, part := range parts {
		if !identifier.MatchString(part) {
			return Table{}, fmt.Errorf("table %q: expected lower-case letters, digits and underscores, starting with a letter or underscore (optionally schema.table on PostgreSQL)", name)
		}
		if len(part) > maxLen {
			return Table{}, fmt.Errorf("table %q: a name is longer than %d characters", name, maxLen)
		}
	}
	return Table{kind: k, schema: schema, name: table}, nil
}

// SQL returns the scripts that create the table of kind k named name in
// dialect d, or bring it up to date, one after the other: for teams that
// apply schema changes with their own migration tool. [Migrate] runs the
// same scripts.
func (k *Kind) SQL(d Dialect, name string) (string, error) {
	t, err := k.Table(d, name)
	if err != nil {
		return "", err
	}
	scripts, err := t.scripts(d)
	if err != nil {
		return "", err
	}
	return strings.Join(scripts, "\n"), nil
}

// String returns the table's name as configured: "table" or
// "schema.table".
func (t Table) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

// Quoted returns the table's name as a quoted SQL identifier, schema
// included.
func (t Table) Quoted() string {
	if t.schema == "" {
		return Quote(t.name)
	}
	return Quote(t.schema) + "." + Quote(t.name)
}

// Derived returns the name of something that belongs to table t, such as
// an index: the table's own name (without its schema, which the index
// shares) followed by suffix. A name that would pass the 63-byte
// identifier limit is shortened, with a hash of the whole, so that two
// long table names never share it.
func (t Table) Derived(suffix string) string {
	name := t.name + suffix
	if len(name) > maxIdentifier {
		h := fnv.New32a()
		h.Write([]byte(name))
		tag := fmt.Sprintf("_%08x", h.Sum32())
		name = t.name[:maxIdentifier-len(suffix)-len(tag)] + tag + suffix
	}
	return name
}

// Sibling returns the table beside t, in its schema, that t's scripts
// create too (the outbox's table of per-key counters, say), named
// t.Derived(suffix). It is of no kind: [Migrate] refuses it, and t's
// migration creates it.
func (t Table) Sibling(suffix string) Table {
	return Table{schema: t.schema, name: t.Derived(suffix)}
}

// Quote quotes an identifier. It is safe only for identifiers made of the
// names that [Kind.Table] admits: those hold no quote characters.
func Quote(ident string) string { return `"` + ident + `"` }

// scripts returns the *.sql files of t's kind for d in file-name order,
// with every placeholder filled in.
func (t Table) scripts(d Dialect) ([]string, error) {
	dir := path.Join("migrations", d.String())
	entries, err := fs.ReadDir(t.kind.Migrations, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations in %s: %w", dir, err)
	}
	pairs := []string{"{{table}}", t.Quoted()}
	if t.kind.Vars != nil {
		for k, v := range t.kind.Vars(t) {
			pairs = append(pairs, "{{"+k+"}}", v)
		}
	}
	r := strings.NewReplacer(pairs...)
	var scripts []string
	for _, e := range entries { // fs.ReadDir sorts them by name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(t.kind.Migrations, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		scripts = append(scripts, r.Replace(string(b)))
	}
	return scripts, nil
}
