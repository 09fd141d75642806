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
// messageID, replayed replays times before, its poison copy not confirmed
// yet. A key parked already keeps the fact it waits behind.
func (g *SQLGuard) Park(ctx context.Context, consumer, key, messageID string, replays int) error {
	ph := g.dialect.Placeholder
	q := fmt.Sprintf("INSERT INTO %s (consumer, ordering_key, message_id, replays, poisoned, parked_at) VALUES (%s, %s, %s, %s, 0, %s) ON CONFLICT DO NOTHING",
		parkedTable(g.table).Quoted(), ph(1), ph(2), ph(3), ph(4), ph(5))
	return g.exec(ctx, "park", q, consumer, key, messageID, replays, g.dialect.Time(g.now()))
}

// ConfirmPark records that the poison copy of messageID, the fact
// consumer's key is parked behind, was confirmed.
func (g *SQLGuard) ConfirmPark(ctx context.Context, consumer, key, messageID string) error {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("UPDATE %s SET poisoned = 1 WHERE consumer = %s AND ordering_key = %s AND message_id = %s",
		parkedTable(g.table).Quoted(), p(1), p(2), p(3))
	return g.exec(ctx, "confirm park", q, consumer, key, messageID)
}

// Unpark lifts the park of consumer's ordering key.
func (g *SQLGuard) Unpark(ctx context.Context, consumer, key string) error {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("DELETE FROM %s WHERE consumer = %s AND ordering_key = %s", parkedTable(g.table).Quoted(), p(1), p(2))
	return g.exec(ctx, "unpark", q, consumer, key)
}

// ParkedBehind returns the poisoned fact consumer's ordering key waits
// behind (messageID "" when the key is not parked), the replays it had,
// and whether its poison copy was confirmed.
func (g *SQLGuard) ParkedBehind(ctx context.Context, consumer, key string) (messageID string, replays int, poisoned bool, err error) {
	p := g.dialect.Placeholder
	q := fmt.Sprintf("SELECT message_id, replays, poisoned FROM %s WHERE consumer = %s AND ordering_key = %s", parkedTable(g.table).Quoted(), p(1), p(2))
	tx, err := g.db.BeginTx(ctx, sqldb.TxOptions{})
	if err != nil {
		return "", 0, false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	rs, err := tx.QueryContext(ctx, q, consumer, key)
	if err != nil {
		return "", 0, false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	defer rs.Close()
	var n, confirmed int64
	if rs.Next() {
		if err := rs.Scan(&messageID, &n, &confirmed); err != nil {
			return "", 0, false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
		}
	}
	if err := rs.Err(); err != nil {
		return "", 0, false, fmt.Errorf("idempotency: read park of %q: %w", key, err)
	}
	return messageID, int(n), confirmed != 0, nil
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
