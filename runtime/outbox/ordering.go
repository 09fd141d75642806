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
// The relay publishes rows in id order. Order per key on the broker holds
// with one relay per table and no failed publishes: a row whose publish
// failed is retried after later rows of its key went out, and two relays
// share rows without regard to keys. The consumer's sequence check counts
// and logs either case as a step back.
type ordering struct {
	count  string // counts the key up
	insert string // the row insert that takes the key's number
}

func newOrdering(d dialect, t sqldb.Table) ordering {
	p := d.Placeholder
	seq := seqTable(t).Quoted()
	o := ordering{
		count: fmt.Sprintf("INSERT INTO %[1]s (ordering_key, seq) VALUES (%[2]s, 1) ON CONFLICT (ordering_key) DO UPDATE SET seq = %[1]s.seq + 1", seq, p(1)),
		insert: fmt.Sprintf("INSERT INTO %s (id, routing_key, version, envelope, created_at, ordering_seq) VALUES (%s, %s, %s, %s, %s, (SELECT seq FROM %s WHERE ordering_key = %s))",
			t.Quoted(), p(1), p(2), p(3), p(4), p(5), seq, p(6)),
	}
	if d.notify {
		o.insert = fmt.Sprintf("WITH written AS (%s RETURNING 1) SELECT pg_notify(%s, '') FROM written", o.insert, p(7))
	}
	return o
}

// number counts the fact's key up in tx and returns the insert statement
// and arguments that store the row with the key's new number.
func (o ordering) number(ctx context.Context, tx sqldb.Execer, f runtime.Fact, env runtime.Envelope, args []any) (string, []any, error) {
	key, err := runtime.OrderingKeyOf(env.Payload, f.OrderingKey)
	if err != nil {
		return "", nil, err
	}
	if _, err := tx.ExecContext(ctx, o.count, key); err != nil {
		return "", nil, fmt.Errorf("number the fact in its ordering key's sequence: %w", err)
	}
	return o.insert, append(args, key), nil
}

// sequenceSource is the x-ordering-source of the facts relayed from the
// outbox table t: one source for every writer and relay of the table.
func sequenceSource(t sqldb.Table) string { return "outbox:" + t.String() }
