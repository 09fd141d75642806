// Package asyncapi renders the model of a schema directory as an AsyncAPI
// 3.0.0 document, so that the event-driven ecosystem's tools (catalogues,
// visualisers, code generators for other languages) can read what warren
// compiles into Go. It is pure: it returns bytes and writes nothing.
//
// The document describes the wire contract as built:
//
//   - One channel per fact, addressed by its routing key, with an AMQP
//     0-9-1 channel binding naming the events exchange (durable, topic).
//   - One message per fact. Its payload is the envelope every message
//     carries ({"id", "occurred_at", "payload"}), whose payload is the
//     fact's JSON Schema; the header x-fact-version holds the schema
//     version. The schema files are carried under components.schemas, one
//     entry per file, with each $ref rewritten to point into the document,
//     so shared definitions stay shared.
//   - A send operation per fact, for the service that publishes it
//     (persistent, mandatory, with publisher confirms), and a receive
//     operation per consumer and fact it handles, on the fact's channel,
//     so that tools connect producer and consumers; the operation names the
//     consumer's work queue in x-warren-queue, since AMQP consumers read
//     queues and the AMQP operation binding has no field for one.
//   - One channel per stream (see streams.go), addressed by its name: a
//     plain stream's AMQP binding is its queue (of type stream), a super
//     stream's its hash exchange, with their arguments, bindings and
//     partitions as x-warren extensions. A stream consumer's receive
//     operations are on its stream's channel, since it reads the stream
//     from an offset of its own, not a queue bound to the exchange; its
//     x-warren-queue names the stream, or a super stream's partitions.
//
// Output is deterministic: the same model gives the same bytes.
package asyncapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/generator/names"
)

// amqpBindingVersion is the version of the AMQP 0-9-1 bindings used.
const amqpBindingVersion = "0.3.0"

// Options are what the model does not say.
type Options struct {
	// Version is info.version, the version of the described API. Default
	// "0.0.0": a schema directory has no version of its own.
	Version string
}

// Generate returns the AsyncAPI document of m, built from the loaded
// schemas s, as indented JSON.
func Generate(m *model.Model, s *load.Schemas, opts Options) ([]byte, error) {
	if opts.Version == "" {
		opts.Version = "0.0.0"
	}
	schemas, keys, err := componentSchemas(m, s)
	if err != nil {
		return nil, err
	}
	strs := streams(m, s)
	doc := document{
		AsyncAPI:           "3.0.0",
		Info:               info(m, strs, opts),
		DefaultContentType: "application/json",
		Channels:           map[string]channel{},
		Operations:         map[string]operation{},
		Components:         components{Schemas: schemas, Messages: map[string]message{}},
	}
	for _, f := range m.Facts {
		doc.Channels[f.GoName] = factChannel(m, f)
		// A fact the manifest declares may point into its file
		// (vendor/openapi.json#/components/schemas/PaymentCaptured).
		payload := "#/components/schemas/" + keys[f.Source] + (&url.URL{Fragment: f.Pointer}).EscapedFragment()
		doc.Components.Messages[f.GoName] = factMessage(f, payload)
		doc.Operations[sendID(f)] = sendOperation(m, f)
	}
	byName := map[string]stream{}
	for _, st := range strs {
		doc.Channels[st.channelID()] = streamChannel(m, st)
		byName[st.Name] = st
	}
	for _, c := range m.Consumers {
		for _, f := range c.Facts {
			f = f.Latest() // a consumer that reads an older version receives the one channel
			if st, ok := byName[c.Topology.Stream]; ok {
				doc.Operations[receiveID(c, f)] = streamReceiveOperation(c, f, st)
				continue
			}
			doc.Operations[receiveID(c, f)] = receiveOperation(c, f)
		}
	}
	addRequests(&doc, m, keys)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode the AsyncAPI document: %w", err)
	}
	return buf.Bytes(), nil
}

func info(m *model.Model, strs []stream, opts Options) infoObject {
	desc := "The facts of Go package " + m.Package + ", as warren generates it from its schema directory: " +
		"each fact is published to the events exchange " + m.Exchanges.Events + " with its routing key, " +
		"in a JSON envelope, and consumed from the work queue of each consumer whose bindings match it."
	if len(strs) > 0 {
		desc = "The facts of Go package " + m.Package + ", as warren generates it from its schema directory: " +
			"each fact is published to the events exchange " + m.Exchanges.Events + " with its routing key, in a JSON envelope"
		if len(m.Topology.DirectStreams()) > 0 {
			desc += " (or written straight into the stream that alone keeps it, when that stream publishes directly: its publish operation says so)"
		}
		desc += ". A queue consumer reads it from its work queue, bound to the events exchange with the consumer's bindings. " +
			"A stream keeps every fact its bindings match, whoever read it, until its retention drops it; " +
			"a stream consumer reads its stream (not a queue bound to the exchange) from an offset of its own, which the broker keeps under the consumer's name, " +
			"and its work queue receives only what the consumer sends itself (its retries and deferrals)."
	}
	if m.ManifestDescription != "" {
		desc = m.ManifestDescription + "\n\n" + desc
	}
	title := m.Package
	if title == "" { // warren.json need not name a Go package
		title = m.Exchanges.Events
	}
	return infoObject{Title: title, Version: opts.Version, Description: desc}
}

func factChannel(m *model.Model, f *model.Fact) channel {
	return channel{
		Address:     f.RoutingKey,
		Title:       f.GoName,
		Description: factDescription(f),
		Messages:    map[string]ref{f.GoName: {Ref: "#/components/messages/" + f.GoName}},
		Bindings: &channelBindings{AMQP: amqpChannel{
			Is: "routingKey",
			Exchange: &amqpExchange{
				Name:       m.Exchanges.Events,
				Type:       "topic",
				Durable:    true,
				AutoDelete: false,
			},
			BindingVersion: amqpBindingVersion,
		}},
	}
}

// factMessage is the message of fact f, whose payload's schema is at
// payloadRef.
func factMessage(f *model.Fact, payloadRef string) message {
	headers := map[string]any{
		"x-fact-version": map[string]any{
			"type":        "integer",
			"const":       f.Version,
			"description": "The version of the payload's schema (x-version). A consumer built for another version refuses the message.",
		},
	}
	required := []string{"x-fact-version"}
	if f.OrderingKey != "" {
		headers["x-ordering-key"] = map[string]any{"type": "string", "description": "The payload's value at " + f.OrderingKey + ": facts with the same value are handled in publish order by ordered consumers."}
		headers["x-ordering-seq"] = map[string]any{"type": "integer", "minimum": 1, "description": "The fact's number in its ordering key's sequence from x-ordering-source, from 1."}
		headers["x-ordering-source"] = map[string]any{"type": "string", "description": "Who numbered the fact: a publisher instance, or an outbox table."}
		required = append(required, "x-ordering-key", "x-ordering-seq", "x-ordering-source")
	}
	return message{
		Name:        f.GoName,
		Title:       f.GoName,
		Summary:     fmt.Sprintf("A %s fact, schema version %d.", f.RoutingKey, f.Version),
		Description: factDescription(f),
		ContentType: "application/json",
		Headers:     map[string]any{"type": "object", "required": required, "properties": headers},
		Payload:     envelope(payloadRef),
		Bindings:    &messageBindings{AMQP: amqpMessage{MessageType: f.RoutingKey, BindingVersion: amqpBindingVersion}},
	}
}

// envelope is the schema of the JSON envelope around a payload whose
// schema is at payloadRef.
func envelope(payloadRef string) map[string]any {
	return map[string]any{
		"type":                 "object",
		"description":          "The envelope of every message.",
		"required":             []string{"id", "occurred_at", "payload"},
		"additionalProperties": false,
		"properties": map[string]any{
			"id": map[string]any{
				"type":        "string",
				"description": "Made once by the producer (a UUIDv7) and sent as the AMQP message-id; the same on every retry, redelivery and replay. Consumers deduplicate by it.",
			},
			"occurred_at": map[string]any{
				"type":        "string",
				"format":      "date-time",
				"description": "When it happened; also the AMQP timestamp.",
			},
			"payload": map[string]any{"$ref": payloadRef},
		},
	}
}

func factDescription(f *model.Fact) string {
	d := f.Description
	if f.Deprecated {
		d = strings.TrimSpace("Deprecated. " + d)
	}
	return d
}

// Operation ids: ids allow letters, digits, '_' and '-'; Go names are
// unique among facts and among consumers and are made of letters and
// digits, so these cannot collide.
func sendID(f *model.Fact) string { return "publish" + f.GoName }

func receiveID(c *model.Consumer, f *model.Fact) string {
	return c.GoName + "_" + names.Method(f.GoName)
}

func sendOperation(m *model.Model, f *model.Fact) operation {
	desc := "The payload is validated against its schema before anything is sent. A fact that no queue is bound to is returned by the broker (mandatory) and is an error."
	if s, ok := m.Topology.DirectStream(m.Exchanges.Events, f.RoutingKey); ok {
		// Its readers must know: a queue bound to the exchange gets none.
		desc = fmt.Sprintf("The payload is validated against its schema before anything is sent. The producing service writes the fact directly into the stream %q over RabbitMQ's stream protocol, not through the exchange: read it from that stream. A queue bound to the exchange does not receive it, though a copy published through the exchange by another client reaches the stream by its bindings.", s)
	}
	return operation{
		Action:      "send",
		Channel:     ref{Ref: "#/channels/" + f.GoName},
		Title:       "Publish " + f.GoName,
		Summary:     fmt.Sprintf("The producing service publishes %s with publisher confirms; the broker's confirm ends the publish.", f.RoutingKey),
		Description: desc,
		Messages:    []ref{{Ref: "#/channels/" + f.GoName + "/messages/" + f.GoName}},
		Bindings: &operationBindings{AMQP: amqpOperation{
			DeliveryMode:   2,
			Mandatory:      boolPtr(true),
			Timestamp:      boolPtr(true),
			BindingVersion: amqpBindingVersion,
		}},
	}
}

func receiveOperation(c *model.Consumer, f *model.Fact) operation {
	desc := fmt.Sprintf("Consumer %s reads its work queue %s, bound to the events exchange with %s. "+
		"A failed attempt goes to a delay queue and back; after the last attempt, or on a permanent error, to %s.",
		c.Name, c.Topology.Queue, strings.Join(quoteAll(c.Bindings), ", "), c.Topology.PoisonQueue)
	queue := c.Topology.Queue
	if c.Topology.Ordered() {
		queue = strings.Join(c.Topology.Shards, ", ")
		desc = fmt.Sprintf("Consumer %s handles the facts of one ordering key (header x-ordering-key) one at a time in publish order. "+
			"They reach its shard queues %s, each read by a single active consumer, through the x-consistent-hash exchange %s, bound to the events exchange with %s. "+
			"A failed attempt is retried in place; after the last attempt, or on a permanent error, it goes to %s.",
			c.Name, queue, c.Topology.ShardExchange, strings.Join(quoteAll(c.Bindings), ", "), c.Topology.PoisonQueue)
	}
	if b := c.Topology.Batch; c.Topology.Batched() {
		desc += fmt.Sprintf(" It takes its facts in batches of up to %d, each closed %s after its first fact at the latest, and settles each fact on its own.", b.Size, b.Wait)
	}
	if c.Description != "" {
		desc = c.Description + "\n\n" + desc
	}
	return operation{
		Action:      "receive",
		Channel:     ref{Ref: "#/channels/" + f.GoName},
		Title:       c.GoName + " handles " + f.GoName,
		Summary:     fmt.Sprintf("%s handles %s.", c.Name, f.RoutingKey),
		Description: desc,
		Messages:    []ref{{Ref: "#/channels/" + f.GoName + "/messages/" + f.GoName}},
		Bindings:    &operationBindings{AMQP: amqpOperation{Ack: boolPtr(true), BindingVersion: amqpBindingVersion}},
		Queue:       queue,
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func boolPtr(b bool) *bool { return &b }
