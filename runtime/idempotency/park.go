package idempotency

import (
	"context"
	"fmt"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// Parked ordering keys. An ordered consumer with onPoison park sends the
// later facts of a key whose fact went to poison after it, until that
// fact comes back. An SQLGuard keeps those parks in the table
// "<table>_parked" beside its claims ([runtime.ParkStore]), so that the
// instance that takes a shard over, or the same one restarted, goes on
// parking them. Migrate creates the table.

// Park records that consumer's ordering key waits behind the poisoned fact
// messageID. A key parked already keeps the fact it waits behind.
func (g *SQLGuard) Park(ctx context.Context, consumer, key, messageID string) error {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("INSERT INTO %s (consumer, ordering_key, message_id, parked_at) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
		parkedTable(g.table).Quoted(), p(1), p(2), p(3), p(4))
	return g.exec(ctx, "park", q, consumer, key, messageID, g.dialect.Time(g.now()))
}

// Unpark lifts the park of consumer's ordering key.
func (g *SQLGuard) Unpark(ctx context.Context, consumer, key string) error {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("DELETE FROM %s WHERE consumer = %s AND ordering_key = %s", parkedTable(g.table).Quoted(), p(1), p(2))
	return g.exec(ctx, "unpark", q, consumer, key)
}

// ParkedBehind returns the poisoned fact consumer's ordering key waits
// behind, and false when the key is not parked.
func (g *SQLGuard) ParkedBehind(ctx context.Context, consumer, key string) (messageID string, parked bool, err error) {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("SELECT message_id FROM %s WHERE consumer = %s AND ordering_key = %s", parkedTable(g.table).Quoted(), p(1), p(2))
	tx, err := g.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return "", false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	rs, err := tx.QueryContext(ctx, q, consumer, key)
	if err != nil {
		return "", false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	defer rs.Close()
	if rs.Next() {
		if err := rs.Scan(&messageID); err != nil {
			return "", false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
		}
		parked = true
	}
	if err := rs.Err(); err != nil {
		return "", false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	return messageID, parked, nil
}

// exec runs one statement in a transaction of its own.
func (g *SQLGuard) exec(ctx context.Context, what, q string, args ...any) error {
	tx, err := g.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return fmt.Errorf("idempotency: %s: %w", what, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("idempotency: %s: %w", what, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idempotency: %s: %w", what, err)
	}
	return nil
}
