package asyncapi

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// Streams keep the facts their bindings match, and a stream consumer reads
// its stream, not a queue bound to the events exchange. So each stream
// gets a channel of its own, "stream_<name>" (stream names are lower
// case, fact and request names are not: no collision), addressed by its
// name and carrying the messages of the facts it keeps:
//
//   - a plain stream's AMQP binding is its queue (is "queue"), with its
//     arguments (x-queue-type stream, the retention) and its bindings to
//     the events exchange as x-warren extensions;
//   - a super stream's is its x-consistent-hash exchange, which the stream
//     protocol finds its partitions by, with its bindings and its
//     partition streams.
//
// A stream consumer's receive operations are on its stream's channel.

// stream is one stream of the model's topology.
type stream struct {
	Name        string
	Description string   // the manifest's, "" when none
	Patterns    []string // its bindings on the events exchange
	Queue       topology.Queue
	Exchange    topology.Exchange // a super stream's
	Partitions  []topology.Queue  // a super stream's, in order
}

func (s stream) super() bool { return len(s.Partitions) > 0 }

func (s stream) channelID() string { return "stream_" + s.Name }

// streams returns the streams of m's topology, with their descriptions
// from the manifest.
func streams(m *model.Model, l *load.Schemas) []stream {
	descriptions := map[string]string{}
	if l != nil && l.Manifest != nil {
		for _, s := range l.Manifest.Streams {
			descriptions[s.Name] = s.Description
		}
	}
	patterns := func(name string) []string {
		var out []string
		for _, b := range m.Topology.Bindings {
			if b.Exchange == m.Exchanges.Events && (b.Queue == name || b.ToExchange == name) {
				out = append(out, b.Key)
			}
		}
		return out
	}
	var out []stream
	supers := map[string]bool{}
	for _, ss := range m.Topology.SuperStreams() {
		s := stream{Name: ss.Name, Description: descriptions[ss.Name], Patterns: patterns(ss.Name)}
		for _, e := range m.Topology.Exchanges {
			if e.Name == ss.Name {
				s.Exchange = e
			}
		}
		for _, p := range ss.Partitions {
			q, _ := m.Topology.Queue(p)
			s.Partitions = append(s.Partitions, q)
			supers[p] = true
		}
		out = append(out, s)
	}
	for _, q := range m.Topology.Queues {
		if q.Type == topology.Stream && !supers[q.Name] {
			out = append(out, stream{Name: q.Name, Description: descriptions[q.Name], Patterns: patterns(q.Name), Queue: q})
		}
	}
	return out
}

// keeps reports whether the stream's bindings match the routing key.
func (s stream) keeps(routingKey string) bool {
	words := strings.Split(routingKey, ".")
	for _, p := range s.Patterns {
		if topology.MatchWords(strings.Split(p, "."), words) {
			return true
		}
	}
	return false
}

func streamChannel(m *model.Model, s stream) channel {
	msgs := map[string]ref{}
	for _, f := range m.Facts {
		if s.keeps(f.RoutingKey) {
			msgs[f.GoName] = ref{Ref: "#/components/messages/" + f.GoName}
		}
	}
	var bound []amqpBinding
	for _, p := range s.Patterns {
		bound = append(bound, amqpBinding{Exchange: m.Exchanges.Events, RoutingKey: p})
	}
	patterns := strings.Join(quoteAll(s.Patterns), ", ")
	var desc string
	var amqp amqpChannel
	if s.super() {
		var names []string
		var parts []streamPartition
		for _, p := range s.Partitions {
			names = append(names, p.Name)
			parts = append(parts, streamPartition{Name: p.Name, Arguments: p.Arguments()})
		}
		desc = fmt.Sprintf("A super stream of %d %s, %s, each a RabbitMQ stream (a queue of type stream). "+
			"Its x-consistent-hash exchange %s, bound to the events exchange with %s, appends each fact to the partition its ordering key (header %s) hashes to, "+
			"so that every fact of one key is in one partition, in publish order. %s "+
			"Its consumers read it over RabbitMQ's stream protocol, each as a consumer group with one active instance per partition, from offsets the broker keeps per consumer and partition.",
			len(names), plural(len(names), "partition", "partitions"), andList(names), s.Name, patterns, topology.OrderingKeyHeader, retention(s.Partitions[0], "Each partition"))
		amqp = amqpChannel{
			Is:             "routingKey",
			Exchange:       &amqpExchange{Name: s.Name, Durable: s.Exchange.Durable},
			ExchangeType:   s.Exchange.Kind,
			Arguments:      s.Exchange.Arguments(),
			Bound:          bound,
			Partitions:     parts,
			BindingVersion: amqpBindingVersion,
		}
	} else {
		desc = fmt.Sprintf("A RabbitMQ stream (a queue of type stream), bound to the events exchange with %s: it keeps every fact these match, whoever read it. %s "+
			"Each of its consumers reads it from an offset of its own, which the broker keeps under the consumer's name.",
			patterns, retention(s.Queue, "It"))
		if s.Queue.Direct {
			desc += " The producing service writes the facts that only this stream binds straight into it over RabbitMQ's stream protocol, not through the exchange; a copy published through the exchange reaches it by its bindings."
		}
		amqp = amqpChannel{
			Is:             "queue",
			Queue:          &amqpQueue{Name: s.Name, Durable: true},
			Arguments:      s.Queue.Arguments(),
			Bound:          bound,
			BindingVersion: amqpBindingVersion,
		}
	}
	if s.Description != "" {
		desc = s.Description + "\n\n" + desc
	}
	title := "Stream " + s.Name
	if s.super() {
		title = "Super stream " + s.Name
	}
	return channel{
		Address:     s.Name,
		Title:       title,
		Description: desc,
		Messages:    msgs,
		Bindings:    &channelBindings{AMQP: amqp},
	}
}

// retention says what the stream's retention drops, as a sentence whose
// subject is who.
func retention(q topology.Queue, who string) string {
	var drops []string
	if q.MaxAge > 0 {
		drops = append(drops, "facts older than "+duration(q.MaxAge))
	}
	if q.MaxLengthBytes > 0 {
		drops = append(drops, "the oldest facts once it holds more than "+strconv.FormatInt(q.MaxLengthBytes, 10)+" bytes")
	}
	if len(drops) == 0 {
		return who + " keeps its facts whatever their age and size."
	}
	return who + " drops " + strings.Join(drops, " and ") + "."
}

// duration writes d as the manifest would: "168h", "90m", "30s".
func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// startPosition says where a stream consumer reads a stream (or
// partition) from the first time.
func startPosition(s topology.Start) string {
	return "its start " + strconv.Quote(s.String()) + " (" + s.Describe() + ")"
}

// streamReceiveOperation is the receive operation of stream consumer c for
// fact f, on its stream's channel.
func streamReceiveOperation(c *model.Consumer, f *model.Fact, s stream) operation {
	t := c.Topology
	failures := fmt.Sprintf("Its bindings %s choose which of the stream's facts it handles; it skips the others. "+
		"A failed attempt is copied to its retry ladder and comes back through its own work queue %s, which is bound to nothing and receives only what the consumer sends itself (its retries and deferrals); "+
		"the consumer reads on meanwhile, so a failure never holds the stream. After the last attempt, or on a permanent error, the fact goes to %s.",
		strings.Join(quoteAll(c.Bindings), ", "), t.Queue, t.PoisonQueue)
	var desc, queue string
	var bindings *operationBindings
	if s.super() {
		queue = strings.Join(t.Partitions, ", ")
		desc = fmt.Sprintf("Consumer %s reads the super stream %s over RabbitMQ's stream protocol, in the consumer group %s on each of its partitions %s (single active consumer): "+
			"the broker makes one instance of the consumer active per partition and spreads the partitions over the running instances, so its instances share the partitions, "+
			"and hands a partition to another instance when its active one leaves. "+
			"Each partition is read the first time from %s, after that from the offset stored on the broker under the consumer's name for that partition, plus one. %s",
			c.Name, s.Name, c.Name, andList(t.Partitions), startPosition(t.Start), failures)
	} else {
		queue = s.Name
		desc = fmt.Sprintf("Consumer %s reads the stream %s over AMQP (basic.consume with x-stream-offset): "+
			"the first time from %s, after that from the offset it stored on the broker under its name, plus one. %s",
			c.Name, s.Name, startPosition(t.Start), failures)
		bindings = &operationBindings{AMQP: amqpOperation{Ack: boolPtr(true), BindingVersion: amqpBindingVersion}}
	}
	if c.Description != "" {
		desc = c.Description + "\n\n" + desc
	}
	return operation{
		Action:      "receive",
		Channel:     ref{Ref: "#/channels/" + s.channelID()},
		Title:       c.GoName + " handles " + f.GoName,
		Summary:     fmt.Sprintf("%s handles %s from the stream %s.", c.Name, f.RoutingKey, s.Name),
		Description: desc,
		Messages:    []ref{{Ref: "#/channels/" + s.channelID() + "/messages/" + f.GoName}},
		Bindings:    bindings,
		Queue:       queue,
	}
}

func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
