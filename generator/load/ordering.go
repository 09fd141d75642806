package load

import (
	"encoding/json"
	"strconv"
)

// Ordering is what a fact declares about the order it is handled in and
// its priority: x-ordering-key, x-ordering-entity and x-priority in its
// file, or orderingKey, orderingEntity and priority in the manifest's
// "facts".
type Ordering struct {
	// Key is the ordering key, a JSON pointer into the payload
	// ("/order_id"); "" when the fact declares none. The model checks that
	// it reaches a required scalar property.
	Key string
	// Entity names what the key identifies ("order"); "" when not given,
	// which makes the key's pointer stand for the entity.
	Entity string
	// Priority is the fact's default AMQP priority, 0 when not given.
	Priority int
	// Doc and KeyPointer say where the key is written, for errors.
	Doc        *Document
	KeyPointer string
}

// readOrdering reads the ordering keywords of a fact's file (prefix "x-",
// kebab-case) or of its manifest entry (camelCase) at pointer in doc. The
// meta-schemas have checked the types.
func readOrdering(doc *Document, pointer string, obj map[string]any, inManifest bool) Ordering {
	key, entity, priority := "x-ordering-key", "x-ordering-entity", "x-priority"
	if inManifest {
		key, entity, priority = "orderingKey", "orderingEntity", "priority"
	}
	o := Ordering{Doc: doc, KeyPointer: Append(pointer, key)}
	o.Key, _ = obj[key].(string)
	o.Entity, _ = obj[entity].(string)
	if n, ok := obj[priority].(json.Number); ok {
		o.Priority, _ = strconv.Atoi(n.String())
	}
	return o
}

// OrderedSettings are an ordered consumer's manifest keys.
type OrderedSettings struct {
	Ordered bool // "ordered": true
	Shards  int  // "shards", 0 when not given
	// Park is "onPoison": "park": later facts of a key whose fact was
	// poisoned follow it to poison instead of being handled.
	Park bool
	// Pointer is where "ordered" (or, when absent, the consumer) is.
	Pointer string
}

// readOrderedSettings reads "ordered", "shards" and "onPoison" of the
// consumer at pointer.
func readOrderedSettings(pointer string, obj map[string]any) OrderedSettings {
	s := OrderedSettings{Pointer: pointer}
	s.Ordered, _ = obj["ordered"].(bool)
	if s.Ordered {
		s.Pointer = Append(pointer, "ordered")
	}
	if n, ok := obj["shards"].(json.Number); ok {
		s.Shards, _ = strconv.Atoi(n.String())
	}
	s.Park = obj["onPoison"] == "park"
	return s
}
