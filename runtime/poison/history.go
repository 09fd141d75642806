package poison

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/topology"
)

// HistoryQueue is where [RecordAction] keeps what people did to c's
// poison lane: <consumer>.poison-history.
func HistoryQueue(c topology.Consumer) string { return c.Name + ".poison-history" }

// HistoryLength bounds the history: it keeps the latest HistoryLength
// actions and drops the oldest (x-max-length, x-overflow: drop-head).
const HistoryLength = 10_000

// Action is one thing a person did to a poison lane, as the history keeps
// it.
type Action struct {
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Action string    `json:"action"`          // retry, discard, export, edit
	Group  string    `json:"group,omitempty"` // the group acted on
	Cause  string    `json:"cause,omitempty"` // its normalised cause, for the reader
	ID     string    `json:"id,omitempty"`    // the message acted on, for one message
	From   string    `json:"from"`            // the queue read
	To     string    `json:"to,omitempty"`    // where the messages went
	// Matched is how many messages the group held when the action
	// began; Count how many it moved (or exported).
	Matched int    `json:"matched"`
	Count   int    `json:"count"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"` // the action stopped part way
}

// HistoryArguments are the x-arguments of a history queue.
func HistoryArguments() amqp.Table {
	return amqp.Table{
		"x-queue-type": "quorum",
		"x-max-length": int64(HistoryLength),
		"x-overflow":   "drop-head",
	}
}

// RecordAction adds a to c's history, declaring the history queue on
// first use, and waits for the broker's confirm. A zero a.At is now.
func RecordAction(ctx context.Context, conn Broker, c topology.Consumer, a Action) error {
	queue := HistoryQueue(c)
	if a.At.IsZero() {
		a.At = time.Now()
	}
	a.At = a.At.UTC().Truncate(time.Second)
	a.By = strings.TrimSpace(a.By)
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := declare(ctx, conn, queue, HistoryArguments()); err != nil {
		return fmt.Errorf("record in %s: %w", queue, err)
	}
	pub, err := openPublisher(ctx, conn)
	if err != nil {
		return fmt.Errorf("record in %s: %w", queue, err)
	}
	defer pub.close()
	msg := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Timestamp: a.At, Type: a.Action, Body: body}
	if err := pub.publish(ctx, "", queue, msg); err != nil {
		return fmt.Errorf("record in %s: %w", queue, err)
	}
	return nil
}

// RecordMoved adds to c's history a replay or discard of messages chosen
// by id, routing key or count rather than by group (warren replay, warren
// discard), as [ActOnGroup] records a group's: rec as given (Action, By,
// From, To, Reason), with ID the message's when one moved, Cause its
// cause, the counts how many moved, and err's text when the move stopped
// part way. A move that did nothing and failed at nothing is no action
// and records nothing.
func RecordMoved(ctx context.Context, conn Broker, c topology.Consumer, rec Action, done []Message, err error) error {
	if len(done) == 0 && err == nil {
		return nil
	}
	if len(done) == 1 {
		rec.ID = done[0].ID
		rec.Cause = CauseOf(done[0]).Text
	}
	rec.Matched, rec.Count = len(done), len(done)
	rec.Reason = strings.TrimSpace(rec.Reason)
	if err != nil {
		rec.Error = secret.Text(err.Error())
	}
	return RecordAction(ctx, conn, c, rec)
}

// History returns c's recorded actions, oldest first, reading the history
// queue as [List] reads a poison queue. A lane nobody acted on has no
// history queue yet, and an empty history.
func History(ctx context.Context, conn Broker, c topology.Consumer) ([]Action, error) {
	queue := HistoryQueue(c)
	var out []Action
	err := walk(ctx, conn, c, queue, Filter{}, func(m Message) error {
		var a Action
		if err := json.Unmarshal(m.Body, &a); err != nil {
			return fmt.Errorf("a record that is not an action: %w", err)
		}
		out = append(out, a)
		return nil
	})
	if errors.Is(err, ErrNoQueue) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", queue, err)
	}
	return out, nil
}

// declare declares a queue of warren's own with args.
func declare(ctx context.Context, conn Broker, queue string, args amqp.Table) error {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
		return fmt.Errorf("declare %s: %w", queue, err)
	}
	return nil
}
