package outbox

import (
	"context"
	"fmt"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Facts with an ordering key are numbered from the database: Write counts
// the key up in a table of per-key counters in the business transaction
// and stores the number in the row, and the relay publishes the row with
// it (runtime.Fact.WithSequence) under one source for the whole table,
// "outbox:<table>:<id>". The counter's row stays locked until the
// transaction ends, so the writers of one key, in any process, take
// consecutive numbers in commit order, and an ordered consumer sees one
// sequence per key and can tell a gap from a restart.
//
// The id names the numbering itself, not just the table's name: Migrate
// draws it at random when it creates the counters and keeps it in the
// database beside them (sourceTable), so every writer and relay of the
// table agrees on it, across restarts, while another database with an
// outbox table of the same name, or this one made again, numbers under a
// source of its own. Otherwise an ordered consumer of two services whose
// tables share the default name, both numbering a key from 1, would read
// each one's facts as the other's gaps and steps back.
//
// The relay publishes rows in id order, and relays of one table take turns
// (see dialect.go), so order per key on the broker holds whatever the
// number of relays. A row whose publish failed holds the later rows of its
// key, in its batch and in the claims after it (heldCond in batch.go),
// until it is published or discarded, so they do not overtake it.
type ordering struct {
	count string // counts the key up
}

func newOrdering(d dialect, t sqldb.Table) ordering {
	seq := seqTable(t).Quoted()
	return ordering{
		count: fmt.Sprintf("INSERT INTO %[1]s (ordering_key, seq) VALUES (%[2]s, 1) ON CONFLICT (ordering_key) DO UPDATE SET seq = %[1]s.seq + 1", seq, d.Placeholder(1)),
	}
}

// number counts the fact's key up in tx and returns the key, which the
// row's insert (insertSQL with ordered) takes its new number by.
func (o ordering) number(ctx context.Context, tx sqldb.Execer, f runtime.Fact, env runtime.Envelope) (string, error) {
	key, err := runtime.OrderingKeyOf(env.Payload, f.OrderingKey)
	if err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, o.count, key); err != nil {
		return "", fmt.Errorf("number the fact in its ordering key's sequence: %w", err)
	}
	return key, nil
}

// sourceOf returns the x-ordering-source of the facts relayed from the
// outbox table t: "outbox:<table>:<id>", with the id Migrate drew for the
// table's numbering, read in tx (the claim's transaction) from its
// sourceTable. A table migrated by a version that drew no id is an error
// saying to migrate: its numbered facts wait until it is, rather than go
// out under a source that another database may share.
func sourceOf(ctx context.Context, tx sqldb.Tx, t sqldb.Table) (string, error) {
	src := sourceTable(t)
	var id string
	rows, err := tx.QueryContext(ctx, "SELECT source FROM "+src.Quoted())
	if err != nil {
		return "", fmt.Errorf("read the source of its ordering numbers from %s: %w (expected the table migrated by this version: Outbox.Migrate, or MigrationSQL applied with your own tool)", src, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("read the source of its ordering numbers from %s: %w", src, err)
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read the source of its ordering numbers from %s: %w", src, err)
	}
	if id == "" {
		return "", fmt.Errorf("read the source of its ordering numbers: %s holds no id: expected the row that Outbox.Migrate (or MigrationSQL) inserts; migrate again to draw one", src)
	}
	return "outbox:" + t.String() + ":" + id, nil
}
