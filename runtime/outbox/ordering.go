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
// "outbox:<table>". The counter's row stays locked until the transaction
// ends, so the writers of one key, in any process, take consecutive
// numbers in commit order, and an ordered consumer sees one sequence per
// key and can tell a gap from a restart.
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

// sequenceSource is the x-ordering-source of the facts relayed from the
// outbox table t: one source for every writer and relay of the table.
func sequenceSource(t sqldb.Table) string { return "outbox:" + t.String() }
