package runtime

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"

	"github.com/warrenbus/warren/runtime/topology"
)

// MismatchError reports that an exchange or queue already exists on the
// broker with properties other than the topology declares. RabbitMQ never
// changes an existing queue's arguments: the queue has to be deleted (after
// draining it) or the topology changed back.
type MismatchError struct {
	Kind     string // "queue" or "exchange"
	Name     string
	Argument string // the differing property, e.g. "x-message-ttl", "x-queue-type", "durable"
	Broker   string // the broker's explanation
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s %q already exists with a different %s: %s", e.Kind, e.Name, e.Argument, e.Broker)
}

// Declare declares t on the broker: exchanges, then queues, then bindings,
// with the queue arguments the broker's release line needs
// ([topology.Queue.ArgumentsFor]), known from the version the broker
// announced when the connection opened. Declaring what already exists with the same properties changes nothing,
// so Declare is safe to repeat. A queue or exchange that exists with other
// arguments is reported as a [*MismatchError] naming it and the argument.
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
	if err := checkStreams(s.conn, t); err != nil {
		return c.redact(err)
	}
	if err := declare(s.conn, t); err != nil {
		return c.redact(err)
	}
	c.bounds.add(t)
	return nil
}

func declare(conn transport.Connection, t topology.Topology) error {
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	// A failed declaration closes the channel (the broker answers with a
	// channel error), so only the first error is ever reported.
	defer ch.Close()
	broker := brokerOf(conn)
	// What the broker cannot do is refused before anything is declared.
	if err := checkSuperStreams(conn, t); err != nil {
		return fmt.Errorf("declare topology: %w", err)
	}
	for _, q := range t.Queues {
		if err := q.CheckFor(broker); err != nil {
			return fmt.Errorf("declare queue %q: %w", q.Name, err)
		}
	}
	for _, e := range t.Exchanges {
		if err := ch.ExchangeDeclare(e.Name, e.Kind, e.Durable, false, false, false, amqp.Table(e.Arguments())); err != nil {
			return exchangeError(e, err)
		}
	}
	for _, q := range t.Queues {
		if _, err := ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table(q.ArgumentsFor(broker))); err != nil {
			return declareError("queue", q.Name, err)
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

// checkStreams refuses, before anything is declared, a topology whose
// stream exists on the broker with another retention: the broker keeps a
// stream's arguments as first declared and refuses others, and finding
// that out in the middle of declare would leave the rest half-declared.
// Redeclaring an existing stream with its own arguments changes nothing.
func checkStreams(conn transport.Connection, t topology.Topology) error {
	broker := brokerOf(conn)
	for _, q := range t.Queues {
		if q.Type != topology.Stream {
			continue
		}
		ch, err := conn.Channel()
		if err != nil {
			return fmt.Errorf("open channel: %w", err)
		}
		if _, err := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil); err != nil {
			_ = ch.Close() // absent: declared below, with its retention
			continue
		}
		_, err = ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table(q.ArgumentsFor(broker)))
		_ = ch.Close()
		if err != nil {
			err = declareError("queue", q.Name, err)
			var me *MismatchError
			if errors.As(err, &me) {
				return fmt.Errorf("%w: the stream keeps the retention it was declared with; change it with a policy (rabbitmqctl set_policy, max-age / max-length-bytes) or declare a new stream, nothing was declared", err)
			}
			return err
		}
	}
	return nil
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

func declareError(kind, name string, err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed {
		arg := "argument"
		if m := inequivalentArg.FindStringSubmatch(ae.Reason); m != nil {
			arg = m[1]
		}
		return fmt.Errorf("declare %s %q: %w", kind, name, &MismatchError{Kind: kind, Name: name, Argument: arg, Broker: ae.Reason})
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
// needs it and Address is the stream port that did not answer.
type PluginError struct {
	Plugin   string // e.g. "rabbitmq_consistent_hash_exchange"
	Exchange string // the exchange that needs it
	Kind     string // its type, e.g. "x-consistent-hash"
	Need     string // what else needs it, e.g. `stream consumer "audit"`
	Address  string // the stream port that refused the connection
}

func (e *PluginError) Error() string {
	if e.Exchange == "" {
		return fmt.Sprintf("%s needs the RabbitMQ plugin %s, and nothing answers its stream protocol at %s: enable it on every node with `rabbitmq-plugins enable %s`",
			e.Need, e.Plugin, e.Address, e.Plugin)
	}
	return fmt.Sprintf("exchange %q of type %s needs the RabbitMQ plugin %s: enable it on every node with `rabbitmq-plugins enable %s`",
		e.Exchange, e.Kind, e.Plugin, e.Plugin)
}

// exchangeError explains a failed exchange declaration, naming the plugin
// an exchange type of a plugin needs.
func exchangeError(e topology.Exchange, err error) error {
	var ae *amqp.Error
	if e.Kind == topology.HashExchangeKind && errors.As(err, &ae) && ae.Code == amqp.CommandInvalid {
		return fmt.Errorf("declare exchange %q: %w", e.Name, &PluginError{Plugin: topology.HashExchangePlugin, Exchange: e.Name, Kind: e.Kind})
	}
	return declareError("exchange", e.Name, err)
}
