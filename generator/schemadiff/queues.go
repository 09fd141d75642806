package schemadiff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// compareQueues reports what a consumer's changed settings do to its
// queues on the broker. RabbitMQ never changes the arguments of an
// existing queue: it refuses a redeclaration with others, so a new queue
// type or delivery limit needs an operator before the consumer can start.
// A changed retry ladder declares new delay queues and leaves the old ones
// behind; what waits in them still returns to the work queue when it
// expires, because each dead-letters straight to it.
func compareQueues(new *Dir, oc, nc Consumer) []Change {
	var out []Change
	at := new.pos(New, loc{load.ManifestFile, appendPtr("/consumers", nc.Name)})
	// The change carries the consumer, which every format prints as its
	// subject, so the messages do not name it again.
	add := func(rule, format string, args ...any) {
		ch := change(rule, "", at, format, args...)
		ch.Consumer = nc.Name
		out = append(out, ch)
	}
	ow, ok1 := oc.queue(topology.RoleWork)
	nw, ok2 := nc.queue(topology.RoleWork)
	if !ok1 || !ok2 {
		return nil // a side whose settings do not build has no queues to compare
	}
	op, _ := oc.queue(topology.RolePoison)
	switch {
	case ow.Type != nw.Type:
		add(QueueTypeChanged, "queue type changed from %s to %s, and RabbitMQ refuses to redeclare the existing queues %q and %q with another x-queue-type: before deploying, an operator stops the consumer, drains both queues and deletes them (they are declared again on connect), or the change is reverted",
			ow.Type, nw.Type, ow.Name, op.Name)
	case ow.DeliveryLimit != nw.DeliveryLimit:
		add(DeliveryLimitChanged, "delivery limit changed from %d to %d, and RabbitMQ refuses to redeclare the existing work queue %q with another x-delivery-limit: before deploying, an operator stops the consumer, drains the queue and deletes it (it is declared again on connect), or the change is reverted",
			ow.DeliveryLimit, nw.DeliveryLimit, ow.Name)
	}
	oldLadder, newLadder := retryQueues(oc), retryQueues(nc)
	if slices.Equal(oldLadder, newLadder) {
		return out
	}
	var left []string
	for _, q := range oldLadder {
		if !slices.Contains(newLadder, q) {
			left = append(left, q)
		}
	}
	msg := fmt.Sprintf("retry ladder changed from %s to %s", ladder(oldLadder), ladder(newLadder))
	if len(left) > 0 {
		msg += fmt.Sprintf("; the delay queues %s stay behind on the broker: what waits in them still returns to the work queue, and `warren declare --prune` deletes them once empty", strings.Join(left, ", "))
	}
	add(RetryLadderChanged, "%s", msg)
	return out
}

// retryQueues lists a consumer's delay queues in ladder order.
func retryQueues(c Consumer) []string {
	var names []string
	for _, q := range c.Queues {
		if q.Role == topology.RoleRetry {
			names = append(names, q.Name)
		}
	}
	return names
}

func ladder(queues []string) string {
	if len(queues) == 0 {
		return "no retries"
	}
	return "[" + strings.Join(queues, ", ") + "]"
}
