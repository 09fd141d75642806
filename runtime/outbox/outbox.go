package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// DefaultTable is the outbox table's name when the configured one is empty.
const DefaultTable = "warren_outbox"

// Config says where an [Outbox] writes.
type Config struct {
	Dialect Dialect // Postgres or SQLite; required
	Table   string  // lower-case, "schema.table" allowed on PostgreSQL; default DefaultTable
}

func (c *Config) setDefaults() {
	if c.Table == "" {
		c.Table = DefaultTable
	}
}

// Validate reports a configuration that cannot work: no or an unknown
// dialect, an unsafe table name.
func (c Config) Validate() error {
	_, err := kind.Table(c.Dialect, c.Table)
	return err
}

// Outbox writes facts into an outbox table inside the caller's database
// transaction, for a [Relay] to publish once that transaction has
// committed. An Outbox holds no connection and is safe for concurrent use.
type Outbox struct {
	d       dialect
	table   sqldb.Table
	channel string // the NOTIFY channel, on PostgreSQL
	// insert is the row's INSERT, by whether the fact is scheduled,
	// whether it has an ordering key and whether it is written in several
	// versions: a fact written now in one version uses none of the columns
	// added since the first migration but, with an ordering key,
	// ordering_seq and ordering_key, so a service can write into a table a
	// newer version has not migrated yet.
	insert  [2][2][2]string
	ordered ordering // counts the facts of each ordering key
	due     schedule // when the facts of this view are due; zero: once committed
}

// New returns an Outbox writing to the table cfg names. It does not create
// the table: call [Outbox.Migrate] or apply [MigrationSQL] with your own
// migration tool.
func New(cfg Config) (*Outbox, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("outbox: New: %w", err)
	}
	t, _ := kind.Table(cfg.Dialect, cfg.Table) // checked by Validate
	d := dialects[cfg.Dialect]
	o := &Outbox{d: d, table: t, channel: channel(t)}
	for _, due := range []int{0, 1} {
		for _, ordered := range []int{0, 1} {
			for _, copies := range []int{0, 1} {
				o.insert[due][ordered][copies] = insertSQL(d, t, due == 1, ordered == 1, copies == 1)
			}
		}
	}
	o.ordered = newOrdering(d, t)
	return o, nil
}

// Table returns the outbox table's name as configured.
func (o *Outbox) Table() string { return o.table.String() }

// SequenceTable returns the name of the table beside it that counts the
// facts of each ordering key (see ordering.go), "<table>_seq"; Migrate
// creates both.
func (o *Outbox) SequenceTable() string { return seqTable(o.table).String() }

// SequenceSourceTable returns the name of the one-row table beside it
// that holds the id the relay publishes the numbers of SequenceTable
// under (see [Relay]), "<table>_seq_source"; Migrate creates it and draws
// the id once.
func (o *Outbox) SequenceSourceTable() string { return sourceTable(o.table).String() }

// Write wraps payload in a new [runtime.Envelope], validates it against f's
// schema and inserts it into the outbox in tx, the caller's transaction. It
// returns the message id that the relay will publish the fact with.
//
// Nothing is published by Write. If tx commits, a [Relay] publishes the
// fact afterwards, with this id and this envelope; if tx rolls back, the
// fact is gone with the rest of the transaction. A payload that does not
// encode or does not match f's schema is an error, and nothing is written:
// the transaction is left as it was and may still commit.
//
// tx is a *sql.Tx as it is, or a pgx.Tx wrapped by pgxdb.Tx.
func (o *Outbox) Write(ctx context.Context, tx sqldb.Execer, f runtime.Fact, payload any) (messageID string, err error) {
	return o.write(ctx, tx, runtime.Copy{Fact: f, Payload: payload}, nil)
}

// WriteVersions is [Outbox.Write] for a fact published in several versions
// at once (a dual publish window, see runtime.Publisher.PublishVersions):
// one row holds every copy, each validated against its own Fact's schema
// first, and the relay publishes them as the one message of the fact in
// all its versions, with one id and time, deleting the row once the broker
// confirmed it. The row's version is the newest copy's; the
// others wait in its copies column (migration 005 on PostgreSQL, 012 on
// SQLite). With one copy it is Write.
func (o *Outbox) WriteVersions(ctx context.Context, tx sqldb.Execer, copies ...runtime.Copy) (messageID string, err error) {
	if len(copies) == 0 {
		return "", errors.New("outbox: write versions: no copy")
	}
	newest := 0
	for i, c := range copies {
		if version(c.Fact) > version(copies[newest].Fact) {
			newest = i
		}
	}
	others := make([]runtime.Copy, 0, len(copies)-1)
	for i, c := range copies {
		if i == newest {
			continue
		}
		if c.Fact.RoutingKey != copies[newest].Fact.RoutingKey || version(c.Fact) == version(copies[newest].Fact) {
			return "", fmt.Errorf("outbox: write versions of %s: copy of %s version %d: expected other versions of the same fact", copies[newest].Fact.RoutingKey, c.Fact.RoutingKey, version(c.Fact))
		}
		others = append(others, c)
	}
	return o.write(ctx, tx, copies[newest], others)
}

// storedCopy is one further version of a row's fact, in its copies
// column: a JSON array of them.
type storedCopy struct {
	Version int             `json:"version"`
	Payload json.RawMessage `json:"payload"`
}

// write inserts c, the row's own version, with the further versions
// others (none for a fact written in one version).
func (o *Outbox) write(ctx context.Context, tx sqldb.Execer, c runtime.Copy, others []runtime.Copy) (string, error) {
	f, payload := c.Fact, c.Payload
	if isNil(tx) {
		return "", fmt.Errorf("outbox: write %s: nil transaction: a fact is written in the transaction of the change it reports", f.RoutingKey)
	}
	if f.RoutingKey == "" {
		return "", errors.New("outbox: write: fact has no routing key")
	}
	due, err := o.due.at(time.Now())
	if err != nil {
		return "", fmt.Errorf("outbox: write %s: %w", f.RoutingKey, err)
	}
	env, err := runtime.NewEnvelope(payload)
	if err != nil {
		return "", fmt.Errorf("outbox: write %s: %w", f.RoutingKey, err)
	}
	if f.Validate != nil {
		if err := f.Validate(env.Payload); err != nil {
			return "", fmt.Errorf("outbox: write %s: payload does not match its schema: %w", f.RoutingKey, err)
		}
	}
	var copies []byte
	if len(others) > 0 {
		stored := make([]storedCopy, len(others))
		for i, oc := range others {
			e, err := runtime.NewEnvelope(oc.Payload)
			if err != nil {
				return "", fmt.Errorf("outbox: write %s version %d: %w", f.RoutingKey, version(oc.Fact), err)
			}
			if oc.Fact.Validate != nil {
				if err := oc.Fact.Validate(e.Payload); err != nil {
					return "", fmt.Errorf("outbox: write %s version %d: payload does not match its schema: %w", f.RoutingKey, version(oc.Fact), err)
				}
			}
			stored[i] = storedCopy{Version: version(oc.Fact), Payload: e.Payload}
		}
		if copies, err = json.Marshal(stored); err != nil {
			return "", fmt.Errorf("outbox: write %s: encode copies: %w", f.RoutingKey, err)
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return "", fmt.Errorf("outbox: write %s: encode envelope: %w", f.RoutingKey, err)
	}
	args := []any{env.ID, f.RoutingKey, version(f), body, o.d.Time(env.OccurredAt)}
	scheduled, ordered, several := 0, 0, 0
	if !due.IsZero() {
		scheduled, args = 1, append(args, o.d.Time(due))
	}
	if f.OrderingKey != "" {
		key, err := o.ordered.number(ctx, tx, f, env)
		if err != nil {
			return "", fmt.Errorf("outbox: write %s to %s: %w", f.RoutingKey, o.table, err)
		}
		ordered, args = 1, append(args, key, key)
	}
	if copies != nil {
		several, args = 1, append(args, copies)
	}
	insert := o.insert[scheduled][ordered][several]
	if o.d.notify {
		args = append(args, o.channel)
	}
	if _, err := tx.ExecContext(ctx, insert, args...); err != nil {
		return "", fmt.Errorf("outbox: write %s to %s: %w", f.RoutingKey, o.table, err)
	}
	if o.d.wakeOnWrite {
		wakeRelays(o.d.Dialect, o.table)
	}
	return env.ID, nil
}

// insertSQL returns the INSERT of a row: its arguments are the id, routing
// key, version, envelope and creation time; then the due time if due; then
// the ordering key twice if ordered (its number is looked up by it, and it
// is stored); then the further versions' copies if
// copies; then, on PostgreSQL, the NOTIFY channel.
func insertSQL(d dialect, t sqldb.Table, due, ordered, copies bool) string {
	p := d.Placeholder
	cols, vals, n := "id, routing_key, version, envelope, created_at", []string{p(1), p(2), p(3), p(4), p(5)}, 5
	if due {
		n++
		cols, vals = cols+", due_at", append(vals, p(n))
	}
	if ordered {
		n += 2
		cols, vals = cols+", ordering_seq, ordering_key", append(vals, fmt.Sprintf("(SELECT seq FROM %s WHERE ordering_key = %s)", seqTable(t).Quoted(), p(n-1)), p(n))
	}
	if copies {
		n++
		cols, vals = cols+", copies", append(vals, p(n))
	}
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t.Quoted(), cols, strings.Join(vals, ", "))
	if d.notify {
		// One statement, one round trip: the NOTIFY is queued in the
		// transaction and delivered when it commits (never if it rolls
		// back); PostgreSQL folds a transaction's identical notifications
		// into one.
		q = fmt.Sprintf("WITH written AS (%s RETURNING 1) SELECT pg_notify(%s, '') FROM written", q, p(n+1))
	}
	return q
}

// isNil reports whether tx is nil, or a nil pointer in the interface.
func isNil(tx sqldb.Execer) bool {
	if tx == nil {
		return true
	}
	v := reflect.ValueOf(tx)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// version is the fact's schema version as published: 1 when unset.
func version(f runtime.Fact) int {
	if f.Version == 0 {
		return 1
	}
	return f.Version
}
