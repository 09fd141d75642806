package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"

	"github.com/warrenbus/warren/runtime/topology"
)

// MismatchError reports that an exchange or queue already exists on the
// broker with properties other than the topology declares. RabbitMQ never
// changes an existing queue's arguments: the queue has to be deleted (after
// draining it) or the topology changed back. Advice says what to do about
// this argument of this queue or exchange: a stream's retention, unlike
// its type, can be changed with a policy.
type MismatchError struct {
	Kind     string // "queue" or "exchange"
	Name     string
	Argument string // the differing property, e.g. "x-message-ttl", "x-queue-type", "durable"
	Broker   string // the broker's explanation
	Advice   string // what to do about it; "" when there is nothing to say
}

func (e *MismatchError) Error() string {
	msg := fmt.Sprintf("%s %q already exists with a different %s: %s", e.Kind, e.Name, e.Argument, e.Broker)
	if e.Advice != "" {
		msg += "; " + e.Advice
	}
	return msg
}

// Mismatches returns every [*MismatchError] in err's tree, in order:
// [Conn.Declare] reports each exchange and queue that exists with other
// properties, joined.
func Mismatches(err error) []*MismatchError {
	var out []*MismatchError
	var walk func(error)
	walk = func(err error) {
		if m, ok := err.(*MismatchError); ok {
			out = append(out, m)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// Declare declares t on the broker: exchanges, then queues, then bindings,
// with the queue arguments the broker's release line needs
// ([topology.Queue.ArgumentsFor]), known from the version the broker
// announced when the connection opened. Declaring what already exists with the same properties changes nothing,
// so Declare is safe to repeat. A queue or exchange that exists with other
// arguments is reported as a [*MismatchError] naming it and the argument,
// each such one (errors.Join), found before anything is declared: a
// refused topology leaves nothing new on the broker.
// It deletes nothing.
func (c *Conn) Declare(ctx context.Context, t topology.Topology) error {
	s, err := c.session(ctx)
	if err != nil {
		return fmt.Errorf("declare topology: %w", err)
	}
	if need := streamProtocolNeed(t); need != "" {
		// Offsets and direct writes go over the stream protocol: a
		// broker without it is named now, not at the first offset or
		// publish, and before anything is declared.
		if _, err := c.offsets(ctx, need); err != nil {
			return fmt.Errorf("declare topology: %w", err)
		}
	}
	if err := declare(s.conn, t); err != nil {
		return c.redact(err)
	}
	c.bounds.add(t)
	return nil
}

// declare declares t on conn, once checkDeclare found nothing that the
// broker would refuse; what checkDeclare found existing it declared
// already, with its arguments, and is not declared again.
func declare(conn transport.Connection, t topology.Topology) error {
	found, err := checkDeclare(conn, t)
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	// A failed declaration closes the channel (the broker answers with a
	// channel error), so only the first error is ever reported.
	defer ch.Close()
	broker := brokerOf(conn)
	// An exchange of a plugin's type first: a plugin that is off is then
	// found before anything else is declared.
	exchanges := slices.Clone(t.Exchanges)
	slices.SortStableFunc(exchanges, func(a, b topology.Exchange) int {
		return cmp.Compare(pluginRank(a), pluginRank(b))
	})
	for _, e := range exchanges {
		if found.exchanges[e.Name] {
			continue
		}
		if err := ch.ExchangeDeclare(e.Name, e.Kind, e.Durable, false, false, false, amqp.Table(e.Arguments())); err != nil {
			return exchangeError(e, err)
		}
	}
	for _, q := range t.Queues {
		if found.queues[q.Name] {
			continue
		}
		if _, err := ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table(q.ArgumentsFor(broker))); err != nil {
			return queueError(q, broker, err)
		}
	}
	for _, b := range t.Bindings {
		if b.ToExchange != "" {
			if err := ch.ExchangeBind(b.ToExchange, b.Key, b.Exchange, false, amqp.Table(b.Arguments())); err != nil {
				return fmt.Errorf("bind exchange %q to exchange %q with %q: %w", b.ToExchange, b.Exchange, b.Key, err)
			}
			continue
		}
		if err := ch.QueueBind(b.Queue, b.Key, b.Exchange, false, amqp.Table(b.Arguments())); err != nil {
			if b.Header != "" {
				return fmt.Errorf("bind queue %q to exchange %q by header %q: %w", b.Queue, b.Exchange, b.Header, err)
			}
			return fmt.Errorf("bind queue %q to exchange %q with %q: %w", b.Queue, b.Exchange, b.Key, err)
		}
	}
	return nil
}

// pluginRank orders an exchange whose type a plugin provides before the
// others.
func pluginRank(e topology.Exchange) int {
	if e.Kind == topology.HashExchangeKind {
		return 0
	}
	return 1
}

// checkDeclare refuses, before anything is declared, a topology that the
// broker would refuse part of: what the broker's release cannot do (super
// streams, queue arguments), and every exchange, queue and stream that
// exists with other properties. The broker keeps a queue's or exchange's
// arguments as first declared and refuses others; found in the middle of
// declaring, a mismatch would leave the topology half-declared, a new
// stream's retention fixed for good. Each existing one is found by a
// passive declaration and checked by declaring it again with its
// arguments, which changes nothing when they are its own; every mismatch
// is reported (errors.Join), each a [*MismatchError] with its advice.
// It returns what exists, declared again with its own arguments.
func checkDeclare(conn transport.Connection, t topology.Topology) (existing, error) {
	found := existing{exchanges: map[string]bool{}, queues: map[string]bool{}}
	if err := checkSuperStreams(conn, t); err != nil {
		return found, fmt.Errorf("declare topology: %w", err)
	}
	broker := brokerOf(conn)
	for _, q := range t.Queues {
		if err := q.CheckFor(broker); err != nil {
			return found, fmt.Errorf("declare queue %q: %w", q.Name, err)
		}
	}
	c := &checkChannel{conn: conn}
	defer c.close()
	var mismatches []error
	for _, e := range t.Exchanges {
		exists, err := c.try(func(ch transport.Channel) error {
			return ch.ExchangeDeclarePassive(e.Name, e.Kind, e.Durable, false, false, false, nil)
		})
		if err != nil {
			return found, err
		}
		if !exists {
			continue // declared afresh below
		}
		if _, err := c.try(func(ch transport.Channel) error {
			return ch.ExchangeDeclare(e.Name, e.Kind, e.Durable, false, false, false, amqp.Table(e.Arguments()))
		}); err != nil {
			err = exchangeError(e, err)
			if !isMismatch(err) {
				return found, err
			}
			mismatches = append(mismatches, err)
			continue
		}
		found.exchanges[e.Name] = true
	}
	for _, q := range t.Queues {
		exists, err := c.try(func(ch transport.Channel) error {
			_, err := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil)
			return err
		})
		if err != nil {
			return found, err
		}
		if !exists {
			continue
		}
		if _, err := c.try(func(ch transport.Channel) error {
			_, err := ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table(q.ArgumentsFor(broker)))
			return err
		}); err != nil {
			err = queueError(q, broker, err)
			if !isMismatch(err) {
				return found, err
			}
			mismatches = append(mismatches, err)
			continue
		}
		found.queues[q.Name] = true
	}
	switch len(mismatches) {
	case 0:
		return found, nil
	case 1:
		return found, fmt.Errorf("%w; nothing was declared", mismatches[0])
	}
	return found, fmt.Errorf("%d exchanges and queues exist with other properties; nothing was declared:\n%w", len(mismatches), errors.Join(mismatches...))
}

// existing is what checkDeclare found on the broker and declared again
// with its own arguments, by name.
type existing struct{ exchanges, queues map[string]bool }

func isMismatch(err error) bool {
	var me *MismatchError
	return errors.As(err, &me)
}

// checkChannel is the channel of checkDeclare's declarations, opened again
// after each that the broker refused (a channel error closes it).
type checkChannel struct {
	conn transport.Connection
	ch   transport.Channel
}

// try runs do on the channel. A NOT_FOUND (a passive declaration of what
// does not exist) is exists false and no error; another channel error is
// returned as do's error, and the next try opens a new channel; an error
// opening the channel is returned as it is.
func (c *checkChannel) try(do func(transport.Channel) error) (exists bool, err error) {
	if c.ch == nil {
		ch, err := c.conn.Channel()
		if err != nil {
			return false, fmt.Errorf("open channel: %w", err)
		}
		c.ch = ch
	}
	err = do(c.ch)
	if err == nil {
		return true, nil
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && !ae.Server {
		// Not the broker's answer (the connection or channel is gone).
		c.close()
		return false, err
	}
	_ = c.ch.Close() // closed by the broker's channel error
	c.ch = nil
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return false, nil
	}
	return false, err
}

func (c *checkChannel) close() {
	if c.ch != nil {
		_ = c.ch.Close()
		c.ch = nil
	}
}

// queueError explains a failed queue declaration; a mismatch carries the
// advice for its argument.
func queueError(q topology.Queue, broker topology.Broker, err error) error {
	return declareError("queue", q.Name, err, func(arg, reason string) string { return queueAdvice(q, broker, arg, reason) })
}

// queueAdvice says what to do about a queue or stream q that exists with
// another arg. A queue's type never changes; a stream's retention is
// changed with a policy, whose keys max-age and max-length-bytes take
// precedence over a stream's arguments; a stream's segment size is fixed
// when it is created (RabbitMQ reads the policy key
// stream-max-segment-size-bytes only then). Deleting a stream deletes the
// facts it keeps.
func queueAdvice(q topology.Queue, broker topology.Broker, arg, reason string) string {
	if arg == "x-queue-type" {
		current := "existing"
		if m := currentValue.FindStringSubmatch(reason); m != nil {
			current = m[1]
		}
		switch {
		case q.Type == topology.Stream:
			return fmt.Sprintf("a queue's type never changes, and no policy changes it: delete the %s queue %q (after draining it) for the stream to be declared in its place, or give the stream another name in warren.json", current, q.Name)
		case current == string(topology.Stream):
			return fmt.Sprintf("a queue's type never changes, and no policy changes it: give the %s queue another name in warren.json, or delete the stream %q, and the facts it keeps with it, for the queue to be declared in its place", q.Type, q.Name)
		}
		return fmt.Sprintf("a queue's type never changes, and no policy changes it: drain and delete it (it is declared again the next time, as a %s queue), or change warren.json back", q.Type)
	}
	if q.Type != topology.Stream {
		return "RabbitMQ never changes the arguments of an existing queue: drain and delete it (it is declared again the next time), or change warren.json back"
	}
	switch arg {
	case "x-max-age", "x-max-length-bytes":
		key := strings.TrimPrefix(arg, "x-")
		example := ""
		if v, ok := q.ArgumentsFor(broker)[arg]; ok {
			if str, ok := v.(string); ok {
				v = strconv.Quote(str)
			}
			example = fmt.Sprintf(" (rabbitmqctl set_policy %s-retention '^%s$' '{\"%s\":%v}' --apply-to queues)", q.Name, regexp.QuoteMeta(q.Name), key, v)
		}
		return fmt.Sprintf("a stream keeps the retention it was declared with: put its declared %s back in warren.json and change the retention with a policy, whose key %s takes precedence over a stream's %s%s, or declare a stream of another name",
			arg, key, arg, example)
	case "x-stream-max-segment-size-bytes":
		return "a stream's segment size cannot be changed once it exists: RabbitMQ reads it (the argument, or the policy key stream-max-segment-size-bytes) when the stream is created; put its declared x-stream-max-segment-size-bytes back in warren.json, or declare a stream of another name"
	}
	return "RabbitMQ never changes the arguments of an existing stream: put the declared value back in warren.json, or declare a stream of another name (the stream's facts go with it if it is removed)"
}

// brokerOf returns the release line of the broker conn is connected to, from
// the version it announced in the connection handshake.
func brokerOf(conn transport.Connection) topology.Broker {
	return topology.BrokerOf(conn.ServerVersion())
}

// inequivalentArg matches RabbitMQ's PRECONDITION_FAILED reason, e.g.
// "inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': received
// the value '20' of type 'signedint' but current is none".
var inequivalentArg = regexp.MustCompile(`inequivalent arg '([^']+)'`)

// currentValue matches the value the broker holds in that reason
// ("current is 'classic'", "current is the value 'quorum' of type
// 'longstr'").
var currentValue = regexp.MustCompile(`current is (?:the value )?'([^']+)'`)

// declareError explains a failed declaration of the exchange or queue
// name; a mismatch gets the advice that advice (if not nil) gives for its
// argument and the broker's reason.
func declareError(kind, name string, err error, advice func(arg, reason string) string) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed {
		arg := "argument"
		if m := inequivalentArg.FindStringSubmatch(ae.Reason); m != nil {
			arg = m[1]
		}
		me := &MismatchError{Kind: kind, Name: name, Argument: arg, Broker: ae.Reason}
		if advice != nil {
			me.Advice = advice(arg, ae.Reason)
		}
		return fmt.Errorf("declare %s %q: %w", kind, name, me)
	}
	return fmt.Errorf("declare %s %q: %w", kind, name, err)
}

// PluginError reports that the broker lacks a plugin the topology needs: an
// ordered consumer's x-consistent-hash exchange needs
// rabbitmq_consistent_hash_exchange, which ships with RabbitMQ but is off
// by default. The broker closes the connection over the unknown exchange
// type; the Conn reconnects, and declaring fails the same way until the
// plugin is enabled.
//
// A stream consumer keeps its offset over the stream protocol, which the
// rabbitmq_stream plugin serves (off by default too): Need then says what
// needs it and Address is the stream port that did not answer. Nothing
// listening there means the plugin is off or the port is not the
// plugin's (Config.StreamPort, warren's --stream-port): the message asks
// both.
type PluginError struct {
	Plugin   string // e.g. "rabbitmq_consistent_hash_exchange"
	Exchange string // the exchange that needs it
	Kind     string // its type, e.g. "x-consistent-hash"
	Need     string // what else needs it, e.g. `stream consumer "audit"`
	Address  string // the stream port that refused the connection
}

func (e *PluginError) Error() string {
	if e.Exchange == "" {
		// Nothing listens at the address: the plugin is off, or the
		// address is not its port. Said as the stream protocol's own
		// errors say it (warren replay's, warren status').
		return fmt.Sprintf("%s needs RabbitMQ's stream protocol, and nothing listens at %s: %s", e.Need, e.Address, streamRefusedAdvice)
	}
	return fmt.Sprintf("exchange %q of type %s needs the RabbitMQ plugin %s: enable it on every node with `rabbitmq-plugins enable %s`",
		e.Exchange, e.Kind, e.Plugin, e.Plugin)
}

// streamRefusedAdvice is what a refused connection to the stream
// protocol's port most likely means: internal/streamproto's
// RefusedAdvice, in which warren replay and warren status say it (package
// runtime does not import the stream client's package; a test keeps the
// two the same).
const streamRefusedAdvice = "is the stream plugin on (rabbitmq-plugins enable rabbitmq_stream, on every node), and is this its port (5552 by default)?"

// exchangeError explains a failed exchange declaration, naming the plugin
// an exchange type of a plugin needs.
func exchangeError(e topology.Exchange, err error) error {
	var ae *amqp.Error
	if e.Kind == topology.HashExchangeKind && errors.As(err, &ae) && ae.Code == amqp.CommandInvalid {
		return fmt.Errorf("declare exchange %q: %w", e.Name, &PluginError{Plugin: topology.HashExchangePlugin, Exchange: e.Name, Kind: e.Kind})
	}
	return declareError("exchange", e.Name, err, func(string, string) string {
		return "RabbitMQ never changes an existing exchange's type or arguments: delete the exchange (its bindings go with it; it is declared again the next time), or change warren.json back"
	})
}
