package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenbus/warren/runtime/sqldb"
)

// DefaultRetention is how long claims are kept when Prune is given no
// window. It must outlast the longest time a message can still arrive again:
// the whole retry ladder, plus the time a message may sit in a queue or in
// the poison lane before someone replays it.
const DefaultRetention = 7 * 24 * time.Hour

// ErrNoKey is returned by Run when the consumer or the message id is empty:
// without both there is nothing to deduplicate on.
var ErrNoKey = errors.New("idempotency: empty consumer or message id")

type txKey struct{}

// Tx returns the transaction of the claim that ctx was handed out for, so a
// handler writes its own rows in the same transaction as the claim: they
// commit together or not at all. ok is false when ctx comes from no SQL
// guard (a [MemoryGuard], or no guard at all).
//
// The transaction belongs to the guard: the handler must not commit or roll
// it back (return an error to roll back), and must not keep it after it
// returns.
//
// Tx finds the *sql.Tx of a guard made by [NewSQLGuard]; for a guard over
// another [sqldb.DB] use [TxAs].
func Tx(ctx context.Context) (tx *sql.Tx, ok bool) { return TxAs[*sql.Tx](ctx) }

// TxAs returns the claim's transaction as the driver's own type T, the
// kind the guard's DB hands out: *sql.Tx for a *sql.DB, pgx.Tx for
// pgxdb.FromPool. ok is false when ctx carries no claim, or one of another
// kind. The same rules as for [Tx] apply.
//
//	tx, ok := idempotency.TxAs[pgx.Tx](ctx)
func TxAs[T any](ctx context.Context) (tx T, ok bool) {
	claim, _ := ctx.Value(txKey{}).(sqldb.Tx)
	if claim == nil {
		return tx, false
	}
	tx, ok = claim.Native().(T)
	return tx, ok
}

func withTx(ctx context.Context, tx sqldb.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Pruner deletes claims older than a window. [SQLGuard] and [MemoryGuard]
// implement it.
type Pruner interface {
	// Prune deletes the claims made more than olderThan ago, or more than
	// DefaultRetention ago when olderThan is zero or negative, and returns
	// how many it deleted. It never deletes a claim from under a handler
	// that is still running: PostgreSQL does not see the claim yet, SQLite
	// waits for its transaction, and the memory guard skips it.
	Prune(ctx context.Context, olderThan time.Duration) (deleted int64, err error)
}

// PruneEvery prunes p at once and then every interval until ctx is done,
// deleting claims older than olderThan (DefaultRetention when zero). A
// failed prune is handed to onError (nil ignores it) and the loop carries
// on: the next tick deletes what this one left. Run it in its own goroutine:
//
//	go idempotency.PruneEvery(ctx, guard, time.Hour, 0, func(err error) {
//		logger.Warn("prune idempotency claims", "err", err)
//	})
//
// Every replica of a service may run it; deleting old claims twice is
// harmless.
func PruneEvery(ctx context.Context, p Pruner, interval, olderThan time.Duration, onError func(error)) {
	prune := func() {
		if _, err := p.Prune(ctx, olderThan); err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
	}
	prune()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			prune()
		}
	}
}

func retention(olderThan time.Duration) time.Duration {
	if olderThan <= 0 {
		return DefaultRetention
	}
	return olderThan
}

func checkKey(consumer, messageID string) error {
	if consumer == "" || messageID == "" {
		return fmt.Errorf("%w (consumer %q, message %q)", ErrNoKey, consumer, messageID)
	}
	return nil
}

// claimError wraps a failure of the claim store or of the claim's context.
// When ctx is done the store's own error (an interrupted query, a
// transaction rolled back under the guard) is only a consequence, so ctx's
// error leads and errors.Is(err, context.Canceled) holds.
func claimError(ctx context.Context, op, consumer, messageID string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	return fmt.Errorf("idempotency: %s (consumer %q, message %q): %w", op, consumer, messageID, err)
}

// ClaimTx returns the transaction of the claim that ctx was handed out
// for, as warren's own tables use it ([sqldb.Tx]): the saga store reads
// and writes an instance's state in it, beside the claim. The rules of
// [Tx] apply.
func ClaimTx(ctx context.Context) (tx sqldb.Tx, ok bool) {
	tx, ok = ctx.Value(txKey{}).(sqldb.Tx)
	return tx, ok && tx != nil
}
