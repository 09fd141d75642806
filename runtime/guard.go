package runtime

import "context"

// Guard makes handling idempotent: it remembers which (consumer, message
// id) pairs were handled, so a redelivered or republished fact does its
// work once. runtime/idempotency implements it in memory, PostgreSQL and
// SQLite; the runtime knows only this interface.
type Guard interface {
	// Run claims (consumer, messageID). If the claim is new it calls fn with
	// a ctx that carries the claim's transaction and keeps the claim only if
	// fn returns nil; fn's error is returned wrapped so that errors.Is and
	// errors.As still see it (and [IsPermanent] still holds).
	// duplicate=true means the message was already handled and fn was not
	// called. An error from the store itself (fn not reached, or fn
	// succeeded and the commit failed) is an outage: the consumer marks it
	// [Unavailable], so it spends no attempt.
	Run(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error)
}

// WithGuard runs every handler call through g. A duplicate is acked
// without calling the handler and counted as [DuplicateSkipped]; an error
// from g's store is an outage ([Unavailable]): the message waits in a delay
// queue without spending an attempt, and a run of them pauses the consumer
// ([OutagePolicy]).
//
// The guard sits inside the middleware set by [WithMiddleware] and outside
// the handler's panic recovery, so a panicking handler rolls back its claim.
func WithGuard(g Guard) ConsumerOption {
	return func(o *consumerOptions) { o.guard = g; o.given |= optGuard }
}

// BatchGuard is a [Guard] that also claims the facts of a batch together,
// for batch consumers ([NewBatchConsumer]): every claim of the batch in
// one round trip, in one transaction with the handler's work.
// runtime/idempotency's guards implement it.
type BatchGuard interface {
	Guard
	// RunBatch claims (consumer, id) for each of messageIDs, which are
	// distinct, in one round trip. If any claim is new it calls fn with
	// those ids (fresh, in the order given) and a ctx that carries the
	// claims' transaction. fn returns the ids among fresh whose facts
	// failed: their claims are let go and the others commit with fn's
	// writes, so fn must leave no writes of a fact it reports failed.
	// An error from fn rolls back every claim and is returned wrapped so
	// that errors.Is and errors.As still see it. duplicates are the ids
	// that were handled before: fn never sees them. An error from the
	// store itself (fn not reached, or the release or commit failed) is an
	// outage, as for [Guard.Run].
	RunBatch(ctx context.Context, consumer string, messageIDs []string,
		fn func(ctx context.Context, fresh []string) (failed []string, err error)) (duplicates []string, err error)
}

// ParkStore is a [Guard] that also keeps the parked ordering keys of
// ordered consumers with onPoison park, in its database, so that a park
// outlives the instance that made it: the instance that takes the shard
// over, or this one restarted, goes on sending the key's later facts to
// poison until the poisoned fact comes back replayed from poison. An
// ordered consumer whose guard is one writes a park before the poisoned
// fact's copy, records when the broker confirmed the copy, reads the park
// for every fact (one query per fact), and lifts it when the fact returns
// by replay. When the store fails, the park is written or read in the
// instance's memory only (logged), as without a store, except that a park
// that cannot be lifted gives the returning fact back to its shard, to be
// tried again, so that a stale park never outlives its fact.
// runtime/idempotency's SQL guards implement it.
type ParkStore interface {
	// Park records that consumer's ordering key waits behind the poisoned
	// fact messageID, which had been replayed from poison replays times
	// (its x-replay-count) when it was poisoned; its poison copy is not
	// confirmed yet. A key parked already keeps the fact it waits behind.
	Park(ctx context.Context, consumer, key, messageID string, replays int) error
	// ConfirmPark records that the poison copy of messageID, the fact
	// consumer's key is parked behind, was confirmed; it does nothing when
	// the key is parked behind another fact, or not at all.
	ConfirmPark(ctx context.Context, consumer, key, messageID string) error
	// Unpark lifts the park of consumer's ordering key.
	Unpark(ctx context.Context, consumer, key string) error
	// ParkedBehind returns the fact consumer's ordering key waits behind
	// (messageID "" when it is not parked), the replays it had when it was
	// poisoned, and whether its poison copy was confirmed.
	ParkedBehind(ctx context.Context, consumer, key string) (messageID string, replays int, poisoned bool, err error)
}
