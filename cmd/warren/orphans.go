package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/declared"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// reconcile compares what warren declare declared before (the record on
// the broker) with t, reports the warren-owned queues and bindings t no
// longer has, and with prune deletes the orphaned queues that are empty
// and unused and removes the orphaned bindings. Orphans it leaves are kept
// in the record, so a later declare reports them again. scope limits it to
// the named consumers (nil: all).
//
// A broker user that may not declare the record queue still gets its
// topology declared: the record is skipped with a warning on warn.
func reconcile(ctx context.Context, conn *runtime.Conn, w, warn io.Writer, t topology.Topology, scope []string, prune bool) error {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	ledger, err := declared.Open(ch, t.Exchanges[0].Name)
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.AccessRefused {
		fmt.Fprintf(warn, "warren declare: warning: orphaned queues are not reported: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	now := declared.Of(t)
	queues, bindings := declared.Orphans(ledger.Record, now, scope)
	next := declared.Record{Consumers: map[string]declared.Entry{}}
	for name, e := range ledger.Record.Consumers {
		if scope != nil && !slices.Contains(scope, name) {
			next.Consumers[name] = e // not declared this time: unchanged
		}
	}
	for name, e := range now.Consumers {
		next.Consumers[name] = e
	}
	for _, name := range sortedKeys(queues, bindings) {
		kept := next.Consumers[name]
		recorded := ledger.Record.Consumers[name]
		keptRole := map[string]bool{}
		for _, q := range byRole(name, queues[name]) {
			role := roleOf(name, q)
			// What waits in a delay queue expires into the work queue, and
			// what the work queue gives up on goes to poison: keep the
			// target while its source holds messages.
			blocked := role == "work" && keptRole["retry"] || role == "poison" && keptRole["work"]
			keep, err := pruneQueue(ctx, conn, w, name, q, bindingsOf(recorded, q), prune, blocked)
			if err != nil {
				return err
			}
			if keep {
				keptRole[role] = true
				kept.Queues = append(kept.Queues, q)
				kept.Bindings = append(kept.Bindings, bindingsOf(recorded, q)...)
			}
		}
		for _, b := range bindings[name] {
			if keep, err := pruneBinding(ctx, conn, w, name, b, prune); err != nil {
				return err
			} else if keep {
				kept.Bindings = append(kept.Bindings, b)
			}
		}
		if len(kept.Queues) > 0 || len(kept.Bindings) > 0 {
			next.Consumers[name] = kept
		}
	}
	return ledger.Save(ctx, next)
}

// pruneQueue reports one orphaned queue. With prune, and when it is empty,
// unused and not blocked, it removes the queue's bindings, so that nothing
// warren publishes reaches it any more, checks again, and deletes it; keep
// says whether it is still there. Quorum queues support neither if-empty
// nor if-unused on delete (NOT_IMPLEMENTED), so the checks are what
// decide: only a message published to the queue by name between the last
// check and the delete could be lost, and warren publishes through its
// exchanges.
func pruneQueue(ctx context.Context, conn *runtime.Conn, w io.Writer, consumer, queue string, bindings []topology.Binding, prune, blocked bool) (keep bool, err error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return true, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if isNotFound(err) {
		return false, nil // deleted by someone else: nothing left to track
	}
	if err != nil {
		return true, fmt.Errorf("inspect orphaned queue %q: %w", queue, err)
	}
	busy := q.Messages > 0 || q.Consumers > 0
	switch {
	case busy && prune && q.Consumers == 0 && roleOf(consumer, queue) == "work" && len(bindings) > 0:
		// Nobody reads it, and its bindings keep routing facts into it:
		// stop the inflow, keep what is there for whoever drains it.
		for _, b := range bindings {
			if err := ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil); err != nil {
				return true, fmt.Errorf("unbind orphaned queue %q: %w", queue, err)
			}
		}
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) holds %s and nobody reads it: kept, and unbound so that no more facts reach it; once it is drained, warren declare --prune deletes it\n",
			queue, consumer, count(q.Messages, "message"))
		return true, nil
	case busy:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) holds %s and has %s: kept; once it is drained and unused, warren declare --prune deletes it\n",
			queue, consumer, count(q.Messages, "message"), count(q.Consumers, "consumer"))
		return true, nil
	case blocked:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is empty, but kept while the orphaned queues that feed it hold messages\n", queue, consumer)
		return true, nil
	case !prune:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", queue, consumer)
		return true, nil
	}
	for _, b := range bindings {
		if err := ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil); err != nil {
			return true, fmt.Errorf("unbind orphaned queue %q: %w", queue, err)
		}
	}
	if q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil {
		return true, fmt.Errorf("inspect orphaned queue %q: %w", queue, err)
	}
	if q.Messages > 0 || q.Consumers > 0 {
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is no longer empty or unused; kept, with its bindings removed\n", queue, consumer)
		return true, nil
	}
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		return true, fmt.Errorf("delete orphaned queue %q: %w", queue, err)
	}
	fmt.Fprintf(w, "deleted orphaned queue %q (consumer %q): it was empty\n", queue, consumer)
	return false, nil
}

// roleOf tells a consumer's queue's role by the names runtime/topology gives.
func roleOf(consumer, queue string) string {
	switch {
	case queue == topology.WorkQueue(consumer):
		return "work"
	case queue == topology.PoisonQueue(consumer):
		return "poison"
	default:
		return "retry"
	}
}

// byRole orders queues the way messages flow: delay queues, work, poison.
func byRole(consumer string, queues []string) []string {
	rank := map[string]int{"retry": 0, "work": 1, "poison": 2}
	out := slices.Clone(queues)
	slices.SortStableFunc(out, func(a, b string) int { return rank[roleOf(consumer, a)] - rank[roleOf(consumer, b)] })
	return out
}

// bindingsOf returns the recorded bindings of one queue.
func bindingsOf(e declared.Entry, queue string) []topology.Binding {
	var out []topology.Binding
	for _, b := range e.Bindings {
		if b.Queue == queue {
			out = append(out, b)
		}
	}
	return out
}

// pruneBinding reports one orphaned binding, removing it with prune: the
// facts it routes reach a consumer that no longer handles them.
func pruneBinding(ctx context.Context, conn *runtime.Conn, w io.Writer, consumer string, b topology.Binding, prune bool) (keep bool, err error) {
	dest, unbind := "queue "+strconv.Quote(b.Queue), func(ch *amqp.Channel) error { return ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil) }
	if b.ToExchange != "" {
		// An ordered consumer's hash exchange; the exchange itself is left
		// in place, receiving nothing once unbound.
		dest, unbind = "exchange "+strconv.Quote(b.ToExchange), func(ch *amqp.Channel) error { return ch.ExchangeUnbind(b.ToExchange, b.Key, b.Exchange, false, nil) }
	}
	if !prune {
		fmt.Fprintf(w, "orphaned binding %q from %q to %s (consumer %q): what it routes is poisoned as not handled; warren declare --prune removes it\n",
			b.Key, b.Exchange, dest, consumer)
		return true, nil
	}
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return true, err
	}
	defer ch.Close()
	if err := unbind(ch); err != nil && !isNotFound(err) {
		return true, fmt.Errorf("remove orphaned binding %q from %q to %s: %w", b.Key, b.Exchange, dest, err)
	}
	fmt.Fprintf(w, "removed orphaned binding %q from %q to %s (consumer %q)\n", b.Key, b.Exchange, dest, consumer)
	return false, nil
}

func isNotFound(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound
}

func sortedKeys(a map[string][]string, b map[string][]topology.Binding) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
