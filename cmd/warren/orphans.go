package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/cmd/warren/internal/declared"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// reconcile compares what warren declare declared before (the record on
// the broker) with t, reports the warren-owned queues and bindings t no
// longer has, and with prune deletes the orphaned queues that are empty
// and unused and removes the orphaned bindings; a stream it never deletes
// (keepStream). Orphans it leaves are kept in the record, so a later
// declare reports them again. scope limits it to the named consumers
// (nil: all).
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
	events := t.Exchanges[0].Name
	deleteHint := deleteHintOf(conn.URL())
	for _, name := range sortedKeys(queues, bindings) {
		kept := next.Consumers[name]
		recorded := ledger.Record.Consumers[name]
		heldRole := map[string]bool{} // roles with a queue that stays, --prune or not
		for _, q := range byRole(name, queues[name]) {
			if s, ok := streamOf(events, name, q, bindingsOf(recorded, q)); ok {
				keep, err := keepStream(ctx, conn, w, s, bindingsOf(recorded, q), prune, deleteHint)
				if err != nil {
					return err
				}
				if keep {
					kept.Queues = append(kept.Queues, q)
					kept.Bindings = append(kept.Bindings, bindingsOf(recorded, q)...)
				}
				continue
			}
			role := roleOf(name, q)
			// What waits in a delay queue expires into the work queue, and
			// what the work queue gives up on goes to poison: keep the
			// target while its source holds messages. A source kept only
			// because --prune was not given blocks nothing: --prune
			// deletes it first, then the target.
			blocked := role == "work" && heldRole["retry"] || role == "poison" && heldRole["work"]
			keep, held, err := pruneQueue(ctx, conn, w, name, q, bindingsOf(recorded, q), prune, blocked)
			if err != nil {
				return err
			}
			if held {
				heldRole[role] = true
			}
			if keep {
				kept.Queues = append(kept.Queues, q)
				kept.Bindings = append(kept.Bindings, bindingsOf(recorded, q)...)
			}
		}
		for _, b := range bindings[name] {
			_, toStream := streamOf(events, name, b.Queue, []topology.Binding{b})
			if keep, err := pruneBinding(ctx, conn, w, name, b, prune, toStream && b.ToExchange == ""); err != nil {
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
// says whether it is still there, held whether it would still be there
// with prune (it holds messages, has consumers or is blocked), which is
// what blocks the queue it feeds. Quorum queues support neither if-empty
// nor if-unused on delete (NOT_IMPLEMENTED), so the checks are what
// decide: only a message published to the queue by name between the last
// check and the delete could be lost, and warren publishes through its
// exchanges.
func pruneQueue(ctx context.Context, conn *runtime.Conn, w io.Writer, consumer, queue string, bindings []topology.Binding, prune, blocked bool) (keep, held bool, err error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return true, true, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if isNotFound(err) {
		return false, false, nil // deleted by someone else: nothing left to track
	}
	if err != nil {
		return true, true, fmt.Errorf("inspect orphaned queue %q: %w", queue, err)
	}
	busy := q.Messages > 0 || q.Consumers > 0
	switch {
	case busy && prune && q.Consumers == 0 && roleOf(consumer, queue) == "work" && len(bindings) > 0:
		// Nobody reads it, and its bindings keep routing facts into it:
		// stop the inflow, keep what is there for whoever drains it.
		for _, b := range bindings {
			if err := ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil); err != nil {
				return true, true, fmt.Errorf("unbind orphaned queue %q: %w", queue, err)
			}
		}
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) holds %s and nobody reads it: kept, and unbound so that no more facts reach it; once it is drained, warren declare --prune deletes it\n",
			queue, consumer, count(q.Messages, "message"))
		return true, true, nil
	case busy:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) holds %s and has %s: kept; once it is drained and unused, warren declare --prune deletes it\n",
			queue, consumer, count(q.Messages, "message"), count(q.Consumers, "consumer"))
		return true, true, nil
	case blocked:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is empty, but kept while the orphaned queues that feed it hold messages\n", queue, consumer)
		return true, true, nil
	case !prune:
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is empty: warren declare --prune deletes it\n", queue, consumer)
		return true, false, nil
	}
	for _, b := range bindings {
		if err := ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil); err != nil {
			return true, true, fmt.Errorf("unbind orphaned queue %q: %w", queue, err)
		}
	}
	if q, err = ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil {
		return true, true, fmt.Errorf("inspect orphaned queue %q: %w", queue, err)
	}
	if q.Messages > 0 || q.Consumers > 0 {
		fmt.Fprintf(w, "orphaned queue %q (consumer %q) is no longer empty or unused; kept, with its bindings removed\n", queue, consumer)
		return true, true, nil
	}
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		return true, true, fmt.Errorf("delete orphaned queue %q: %w", queue, err)
	}
	fmt.Fprintf(w, "deleted orphaned queue %q (consumer %q): it was empty\n", queue, consumer)
	return false, false, nil
}

// orphanedStream is an orphaned queue the record shows to be a stream.
type orphanedStream struct {
	name        string
	superStream string // the super stream it is a partition of; "" for a plain stream
}

// streamOf tells from the record whether the orphaned queue of consumer
// is a stream, and of which super stream it is a partition. The record
// keeps names (declared.Entry), not queue types, and AMQP tells no queue's
// type: a passive declare answers counts alone, and for a stream even
// those lag by seconds. Where the record put it tells: runtime/topology
// gives a stream, and a super stream's partition, no consumer, and of the
// other queues without one, the delay levels are each bound by a header
// and the unroutable lane has its fixed name. Whatever else has no
// consumer is taken for a stream, so that a queue the record cannot place
// is kept: keeping one too many costs a line of output, deleting a stream
// the facts it holds.
func streamOf(events, consumer, queue string, bindings []topology.Binding) (orphanedStream, bool) {
	if consumer != "" || queue == topology.UnroutableQueue(events) {
		return orphanedStream{}, false
	}
	s := orphanedStream{name: queue}
	for _, b := range bindings {
		switch {
		case b.Header != "":
			return orphanedStream{}, false // a delay level
		case b.Partition > 0:
			s.superStream = b.Exchange
		}
	}
	return s, true
}

// keepStream reports an orphaned stream, which warren declare never
// deletes, --prune or not: a stream is a log, which reading never empties,
// so no count of messages says it can go (and the count a passive declare
// returns lags by seconds after a publish); what it holds is all there is
// of those facts once retention allows, and deleting it loses them. With
// prune it removes the stream's bindings, so that no more facts reach it,
// but not a partition's binding to its super stream's exchange: that
// binding is what makes the partitions one super stream for whoever reads
// it. keep is false once the stream is gone (deleted by someone else).
func keepStream(ctx context.Context, conn *runtime.Conn, w io.Writer, s orphanedStream, bindings []topology.Binding, prune bool, hint deleteHint) (keep bool, err error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return true, err
	}
	_, err = ch.QueueDeclarePassive(s.name, true, false, false, false, nil)
	ch.Close()
	if isNotFound(err) {
		return false, nil // deleted deliberately: nothing left to track
	}
	if err != nil {
		return true, fmt.Errorf("inspect orphaned stream %q: %w", s.name, err)
	}
	const why = "it holds the facts it was given for as long as its retention allows, and deleting it loses them, so warren declare --prune never deletes a stream"
	if s.superStream != "" {
		// The super stream's inflow is its exchange's binding to the
		// events exchange, an orphaned binding of its own (pruneBinding).
		fmt.Fprintf(w, "orphaned stream %q, a partition of super stream %q: kept; %s; to delete the super stream deliberately: %s\n",
			s.name, s.superStream, why, hint.superStream(s.superStream))
		return true, nil
	}
	if !prune {
		fmt.Fprintf(w, "orphaned stream %q: kept; %s, but unbinds it so that no more facts reach it; to delete it deliberately: %s\n",
			s.name, why, hint.queue(s.name))
		return true, nil
	}
	for _, b := range bindings {
		if b.Partition > 0 {
			continue
		}
		if err := unbindQueue(ctx, conn, b); err != nil {
			return true, fmt.Errorf("unbind orphaned stream %q: %w", s.name, err)
		}
	}
	fmt.Fprintf(w, "orphaned stream %q: kept, and unbound so that no more facts reach it; %s; to delete it deliberately: %s\n",
		s.name, why, hint.queue(s.name))
	return true, nil
}

// unbindQueue removes binding b on a channel of its own: an exchange that
// is gone closes the channel with NOT_FOUND, and then routes nothing to the
// queue anyway.
func unbindQueue(ctx context.Context, conn *runtime.Conn, b topology.Binding) error {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.QueueUnbind(b.Queue, b.Key, b.Exchange, b.Arguments()); err != nil && !isNotFound(err) {
		return fmt.Errorf("binding %q from %q: %w", b.Key, b.Exchange, err)
	}
	return nil
}

// deleteHint writes the commands that delete a stream deliberately, in the
// vhost of the broker warren declare used.
type deleteHint struct {
	vhost string // "/" is the default vhost, which the commands need not name
}

// deleteHintOf returns the deleteHint of the broker at url, whose password
// is redacted (runtime.Conn.URL): only its vhost is read. A URL that does
// not parse (the Conn is between connections) leaves a placeholder for
// the operator to fill in.
func deleteHintOf(url string) deleteHint {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return deleteHint{vhost: "<vhost>"}
	}
	return deleteHint{vhost: u.Vhost}
}

// queue is the rabbitmqctl command that deletes queue name, whatever it
// holds.
func (h deleteHint) queue(name string) string {
	if h.vhost == "/" || h.vhost == "" {
		return "rabbitmqctl delete_queue " + shellWord(name)
	}
	return "rabbitmqctl delete_queue -p " + shellWord(h.vhost) + " " + shellWord(name)
}

// superStream is the rabbitmq-streams command that deletes super stream
// name: its exchange and every partition.
func (h deleteHint) superStream(name string) string {
	if h.vhost == "/" || h.vhost == "" {
		return "rabbitmq-streams delete_super_stream " + shellWord(name)
	}
	return "rabbitmq-streams delete_super_stream " + shellWord(name) + " --vhost " + shellWord(h.vhost)
}

// shellWord quotes s for a POSIX shell when it needs it, so that the
// command printed can be pasted as it is. Queue names are letters, digits
// and '.', '-', '_', ':' (topology.Build checks them); a vhost can be
// anything.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/@%+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
// facts it routes reach a consumer that no longer handles them, or, for a
// binding to a stream (toStream), are appended to a stream the manifest
// no longer binds them to.
func pruneBinding(ctx context.Context, conn *runtime.Conn, w io.Writer, consumer string, b topology.Binding, prune, toStream bool) (keep bool, err error) {
	dest, unbind := "queue "+strconv.Quote(b.Queue), func(ch *amqp.Channel) error { return ch.QueueUnbind(b.Queue, b.Key, b.Exchange, nil) }
	// Whose binding it is, and what it does until removed. A binding no
	// consumer owns is a stream's (streamOf), or one of the delay levels'.
	owner, effect := fmt.Sprintf(" (consumer %q)", consumer), "what it routes is poisoned as not handled"
	switch {
	case toStream:
		dest, owner, effect = "stream "+strconv.Quote(b.Queue), "", "it still appends facts to the stream"
	case consumer == "":
		owner, effect = "", "it still routes facts to the queue"
	}
	if b.ToExchange != "" && consumer == "" {
		// No consumer's: a super stream's exchange (streamOf), bound to
		// the events exchange. Nothing is poisoned for want of it; it
		// appends facts to partitions the manifest no longer has.
		return pruneSuperStreamBinding(ctx, conn, w, b, prune)
	}
	if b.ToExchange != "" {
		// An ordered consumer's hash exchange; the exchange itself is left
		// in place, receiving nothing once unbound.
		dest, unbind = "exchange "+strconv.Quote(b.ToExchange), func(ch *amqp.Channel) error { return ch.ExchangeUnbind(b.ToExchange, b.Key, b.Exchange, false, nil) }
	}
	if !prune {
		keeps := ""
		if toStream {
			keeps = ", and keeps the stream"
		}
		fmt.Fprintf(w, "orphaned binding %q from %q to %s%s: %s; warren declare --prune removes it%s\n",
			b.Key, b.Exchange, dest, owner, effect, keeps)
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
	kept := ""
	if toStream {
		kept = "; the stream is kept"
	}
	fmt.Fprintf(w, "removed orphaned binding %q from %q to %s%s%s\n", b.Key, b.Exchange, dest, owner, kept)
	return false, nil
}

// pruneSuperStreamBinding reports, and with prune removes, the binding of
// an orphaned super stream's exchange to the events exchange, so that no
// more facts reach its partitions. The exchange stays, bound to its
// partitions, which are kept (keepStream): it is what readers of the
// super stream find them by.
func pruneSuperStreamBinding(ctx context.Context, conn *runtime.Conn, w io.Writer, b topology.Binding, prune bool) (keep bool, err error) {
	if !prune {
		fmt.Fprintf(w, "orphaned binding %q from %q to super stream %q: it still appends facts to the super stream; warren declare --prune removes it, and keeps the super stream\n",
			b.Key, b.Exchange, b.ToExchange)
		return true, nil
	}
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return true, err
	}
	defer ch.Close()
	if err := ch.ExchangeUnbind(b.ToExchange, b.Key, b.Exchange, false, nil); err != nil && !isNotFound(err) {
		return true, fmt.Errorf("remove orphaned binding %q from %q to super stream %q: %w", b.Key, b.Exchange, b.ToExchange, err)
	}
	fmt.Fprintf(w, "removed orphaned binding %q from %q to super stream %q: no more facts reach it; the super stream is kept\n", b.Key, b.Exchange, b.ToExchange)
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
