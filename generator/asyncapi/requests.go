package asyncapi

import (
	"fmt"
	"strings"

	"github.com/warrenbus/warren/generator/model"
)

// Requests are asked of one responder and answered once: a channel per
// request key on the requests exchange (direct), a reply channel whose
// address is the request's reply_to (RabbitMQ direct reply-to), a send
// operation with a reply for the caller and a receive operation with the
// same reply for the responder.

func replyID(r *model.Request) string { return "reply_" + r.GoName }

func addRequests(doc *document, m *model.Model, keys map[string]string) {
	for _, r := range m.Requests {
		if r.Responder == nil || r.Responder.Topology == nil {
			continue
		}
		doc.Channels[r.GoName] = channel{
			Address:     r.Key,
			Title:       r.GoName,
			Description: r.Description,
			Messages:    map[string]ref{r.GoName: {Ref: "#/components/messages/" + r.GoName}},
			Bindings: &channelBindings{AMQP: amqpChannel{
				Is:             "routingKey",
				Exchange:       &amqpExchange{Name: r.Responder.Topology.Exchange, Type: "direct", Durable: true},
				BindingVersion: amqpBindingVersion,
			}},
		}
		doc.Channels[replyID(r)] = channel{
			Address:     nil,
			Title:       "Reply to " + r.GoName,
			Description: "The caller's reply_to queue (RabbitMQ direct reply-to); the reply carries the request's correlation_id.",
			Messages:    map[string]ref{replyID(r): {Ref: "#/components/messages/" + replyID(r)}},
		}
		doc.Components.Messages[r.GoName] = message{
			Name:        r.GoName,
			Title:       r.GoName,
			Summary:     fmt.Sprintf("A %s request, schema version %d.", r.Key, r.Version),
			Description: r.Description,
			ContentType: "application/json",
			Payload:     envelope("#/components/schemas/" + keys[r.Source]),
			Bindings:    &messageBindings{AMQP: amqpMessage{MessageType: r.Key, BindingVersion: amqpBindingVersion}},
		}
		_, pointer, _ := strings.Cut(r.ReplyLocation(), "#")
		reply := envelope("#/components/schemas/" + keys[r.Source] + pointer)
		errReply := envelope("")
		props := errReply["properties"].(map[string]any)
		delete(props, "payload")
		props["error"] = map[string]any{
			"type":     "object",
			"required": []string{"message", "permanent"},
			"properties": map[string]any{
				"message":   map[string]any{"type": "string"},
				"permanent": map[string]any{"type": "boolean", "description": "true: asking again will fail the same way"},
			},
		}
		errReply["required"] = []string{"id", "occurred_at", "error"}
		doc.Components.Messages[replyID(r)] = message{
			Name:        replyID(r),
			Title:       "Reply to " + r.GoName,
			ContentType: "application/json",
			Payload:     map[string]any{"oneOf": []any{reply, errReply}},
		}
		rep := &operationReply{
			Address:  &replyAddress{Location: "$message.header#/reply_to"},
			Channel:  ref{Ref: "#/channels/" + replyID(r)},
			Messages: []ref{{Ref: "#/channels/" + replyID(r) + "/messages/" + replyID(r)}},
		}
		msgs := []ref{{Ref: "#/channels/" + r.GoName + "/messages/" + r.GoName}}
		doc.Operations["request"+r.GoName] = operation{
			Action:   "send",
			Channel:  ref{Ref: "#/channels/" + r.GoName},
			Title:    "Ask " + r.Key,
			Summary:  fmt.Sprintf("A caller asks %s of %s and waits for the one reply.", r.Key, r.Responder.Name),
			Messages: msgs,
			Reply:    rep,
			Bindings: &operationBindings{AMQP: amqpOperation{Mandatory: boolPtr(true), BindingVersion: amqpBindingVersion}},
		}
		doc.Operations["answer"+r.GoName] = operation{
			Action:   "receive",
			Channel:  ref{Ref: "#/channels/" + r.GoName},
			Title:    r.Responder.Name + " answers " + r.Key,
			Summary:  fmt.Sprintf("Responder %s reads its queue %s and replies once.", r.Responder.Name, r.Responder.Topology.Queue),
			Messages: msgs,
			Reply:    rep,
			Bindings: &operationBindings{AMQP: amqpOperation{Ack: boolPtr(true), BindingVersion: amqpBindingVersion}},
			Queue:    r.Responder.Topology.Queue,
		}
	}
}
