package membroker

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

type exchange struct {
	name     string
	kind     string
	durable  bool
	builtin  bool
	args     amqp.Table
	bindings []binding
}

// binding routes from an exchange to a queue or to another exchange.
type binding struct {
	key        string
	queue      string // one of queue and toExchange is set
	toExchange string
	args       amqp.Table // what a headers exchange matches; part of the binding's identity, as on RabbitMQ
}

// same reports whether bd and o are one binding: RabbitMQ tells bindings
// apart by source, destination, key and arguments.
func (bd binding) same(o binding) bool {
	return bd.key == o.key && bd.queue == o.queue && bd.toExchange == o.toExchange && reflect.DeepEqual(nonNil(bd.args), nonNil(o.args))
}

func nonNil(t amqp.Table) amqp.Table {
	if t == nil {
		return amqp.Table{}
	}
	return t
}

var exchangeKinds = map[string]bool{"direct": true, "topic": true, "fanout": true, "headers": true, topology.HashExchangeKind: true}

func (x *exchange) bind(bd binding) {
	for _, have := range x.bindings {
		if have.same(bd) {
			return
		}
	}
	x.bindings = append(x.bindings, bd)
}

func (x *exchange) unbind(bd binding) {
	for i, have := range x.bindings {
		if have.same(bd) {
			x.bindings = append(x.bindings[:i], x.bindings[i+1:]...)
			return
		}
	}
}

// matches returns the bindings msg takes from x.
func (x *exchange) matches(key string, msg amqp.Publishing) []binding {
	var out []binding
	switch x.kind {
	case "fanout":
		return x.bindings
	case "direct":
		for _, bd := range x.bindings {
			if bd.key == key {
				out = append(out, bd)
			}
		}
	case "topic":
		for _, bd := range x.bindings {
			if topology.MatchWords(topicWords(bd.key), topicWords(key)) {
				out = append(out, bd)
			}
		}
	case "headers":
		for _, bd := range x.bindings {
			if headersMatch(bd.args, msg.Headers) {
				out = append(out, bd)
			}
		}
	case topology.HashExchangeKind:
		if bd, ok := x.hashPick(key, msg); ok {
			out = append(out, bd)
		}
	}
	return out
}

// headersMatch reports whether a headers exchange's binding with args
// takes a message with headers, as RabbitMQ decides it: x-match "all"
// (the default) needs every other argument matched, "any" one of them;
// an argument with no value (AMQP's void) matches a header of that name
// with any value, one with a value a header equal to it. Arguments whose
// names begin with "x-" are not matched.
func headersMatch(args, headers amqp.Table) bool {
	all := args["x-match"] != "any"
	matched, tried := 0, 0
	for name, want := range args {
		if strings.HasPrefix(name, "x-") {
			continue
		}
		tried++
		have, ok := headers[name]
		if ok && (want == nil || fmt.Sprintf("%T %v", want, want) == fmt.Sprintf("%T %v", have, have)) {
			matched++
		}
	}
	if all {
		return matched == tried
	}
	return matched > 0
}

// hashPick chooses one binding by the hash of the message's hash header
// (or its routing key, without the argument), each binding owning a share
// of the hash space by its weight, which is its binding key: all messages
// with one value reach one queue, as long as the bindings stay.
func (x *exchange) hashPick(key string, msg amqp.Publishing) (binding, bool) {
	total := 0
	for _, bd := range x.bindings {
		total += weight(bd.key)
	}
	if total == 0 {
		return binding{}, false
	}
	value := key
	if h, _ := x.args["hash-header"].(string); h != "" {
		// RabbitMQ hashes a missing header as one more value: every
		// message without it reaches the same queue.
		value = ""
		if v, ok := msg.Headers[h]; ok {
			value = fmt.Sprint(v)
		}
	}
	f := fnv.New32a()
	f.Write([]byte(value))
	point := int(f.Sum32() % uint32(total))
	for _, bd := range x.bindings {
		point -= weight(bd.key)
		if point < 0 {
			return bd, true
		}
	}
	return binding{}, false
}

// topicWords splits a routing or binding key into its words as RabbitMQ
// does: the empty key has no words at all, so "*" does not match it and
// "#" does.
func topicWords(key string) []string {
	if key == "" {
		return nil
	}
	return strings.Split(key, ".")
}

func weight(key string) int {
	n, err := strconv.Atoi(key)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// route returns the queues a message published to exchange with key
// reaches, each once, following exchange-to-exchange bindings.
func (b *Broker) route(exchangeName, key string, msg amqp.Publishing) []*queue {
	var out []*queue
	seenQ := map[string]bool{}
	seenX := map[string]bool{}
	var walk func(x *exchange)
	walk = func(x *exchange) {
		if seenX[x.name] {
			return
		}
		seenX[x.name] = true
		if x.name == "" {
			if q, ok := b.queues[key]; ok && !seenQ[key] {
				seenQ[key] = true
				out = append(out, q)
			}
			return
		}
		before := len(out)
		for _, bd := range x.matches(key, msg) {
			if bd.toExchange != "" {
				if next, ok := b.exchanges[bd.toExchange]; ok {
					walk(next)
				}
				continue
			}
			if q, ok := b.queues[bd.queue]; ok && !seenQ[bd.queue] {
				seenQ[bd.queue] = true
				out = append(out, q)
			}
		}
		// What the exchange routed nowhere goes to its alternate exchange.
		if ae, _ := x.args["alternate-exchange"].(string); ae != "" && len(out) == before {
			if next, ok := b.exchanges[ae]; ok {
				walk(next)
			}
		}
	}
	if x, ok := b.exchanges[exchangeName]; ok {
		walk(x)
	}
	return out
}

func (b *Broker) declareExchange(name, kind string, durable, passive bool, args amqp.Table) *amqp.Error {
	if x, ok := b.exchanges[name]; ok {
		if passive {
			return nil
		}
		if x.kind != kind {
			return precondition("inequivalent arg 'type' for exchange '%s' in vhost '/': received '%s' but current is '%s'", name, kind, x.kind)
		}
		if x.durable != durable {
			return precondition("inequivalent arg 'durable' for exchange '%s' in vhost '/': received '%t' but current is '%t'", name, durable, x.durable)
		}
		for _, arg := range []string{"hash-header", "alternate-exchange"} {
			if h, had := x.args[arg], args[arg]; fmt.Sprint(h) != fmt.Sprint(had) {
				return precondition("inequivalent arg '%s' for exchange '%s' in vhost '/': received '%v' but current is '%v'", arg, name, had, h)
			}
		}
		return nil
	}
	if passive {
		return notFound("no exchange '%s' in vhost '/'", name)
	}
	if strings.HasPrefix(name, "amq.") {
		return &amqp.Error{Code: amqp.AccessRefused, Reason: fmt.Sprintf("ACCESS_REFUSED - exchange name '%s' contains reserved prefix 'amq.*'", name), Server: true}
	}
	b.exchanges[name] = &exchange{name: name, kind: kind, durable: durable, args: copyTable(args)}
	return nil
}

func precondition(format string, a ...any) *amqp.Error {
	return &amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - " + fmt.Sprintf(format, a...), Server: true}
}

func notFound(format string, a ...any) *amqp.Error {
	return &amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - " + fmt.Sprintf(format, a...), Server: true}
}
