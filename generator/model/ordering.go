package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
)

// orderingKeys checks each fact's ordering key against its payload type:
// the pointer must reach a required, non-nullable scalar (string, integer,
// boolean, or a named type or enum of one) through required objects, so
// that every valid payload carries exactly one key. A number is refused:
// 1 and 1.0 are one number written two ways, and would be two keys.
func (b *builder) orderingKeys(facts []*Fact) {
	for _, f := range facts {
		if f.Import != nil && f.Import.Reused() {
			continue // its own directory's model checked it already
		}
		o := f.decl.Ordering
		f.Priority = o.Priority
		if o.Key == "" || f.Type == nil {
			continue
		}
		path, why := keyPath(f.Type, o.Key)
		if why != "" {
			b.errs.Add(o.Doc.Errorf(o.KeyPointer, "fact %s: ordering key %s: %s", f.RoutingKey, strconv.Quote(o.Key), why))
			continue
		}
		f.OrderingKey = o.Key
		f.OrderingKeyPath = path
		f.OrderingEntity = o.Entity
	}
}

// keyPath follows pointer from the payload type t and returns the fields it
// goes through, or says what is wrong with where it leads when it does not
// reach a required scalar.
func keyPath(t *Type, pointer string) (path []*Field, problem string) {
	tokens, _ := load.Tokens(pointer)
	ref := Ref{Kind: Named, Type: t}
	for i, tok := range tokens {
		at := load.Pointer(tokens[:i]...)
		if at == "" {
			at = "the payload"
		}
		if ref.Kind != Named || ref.Type.Kind != Struct {
			return nil, fmt.Sprintf("%s is not an object with properties, so it has no property %s", at, strconv.Quote(tok))
		}
		var field *Field
		for _, fl := range ref.Type.Fields {
			if fl.JSONName == tok {
				field = fl
			}
		}
		switch {
		case field == nil:
			return nil, fmt.Sprintf("%s has no property %s (properties: %s)", at, strconv.Quote(tok), fieldNames(ref.Type))
		case !field.Required:
			return nil, fmt.Sprintf("property %s of %s is optional; expected a required property, so that every fact carries its key", strconv.Quote(tok), at)
		case field.Type.Nullable:
			return nil, fmt.Sprintf("property %s of %s may be null; expected a value that is never null", strconv.Quote(tok), at)
		}
		ref = field.Type
		path = append(path, field)
	}
	if !scalarKey(ref) {
		return nil, "expected it to reach a string, integer or boolean property; " + describeRef(ref) + " is no key"
	}
	return path, ""
}

// scalarKey reports whether values of r make a key: strings, integers and
// booleans, also as enums or named definitions of them.
func scalarKey(r Ref) bool {
	for r.Kind == Named && (r.Type.Kind == Defined || r.Type.Kind == Enum) {
		r = r.Type.Base
	}
	switch r.Kind {
	case String, Int, Bool:
		return !r.Nullable
	}
	return false
}

func describeRef(r Ref) string {
	switch r.Kind {
	case Float:
		return "a number (1 and 1.0 are the same number written two ways)"
	case Bool:
		return "a boolean (two values cannot tell instances apart)"
	case Time:
		return "a date-time (one instant has many spellings)"
	case Named:
		return "a " + r.Type.Kind.String()
	case Slice:
		return "an array"
	case Map:
		return "a map"
	}
	return "any JSON value"
}

func fieldNames(t *Type) string {
	var out []string
	for _, f := range t.Fields {
		out = append(out, f.JSONName)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// checkOrdered checks the facts of every ordered consumer: each must
// declare an ordering key, and all keys must identify one entity, so that
// "one at a time per key" means one at a time per order (say) across the
// consumer's facts. Facts name their entity with x-ordering-entity; without
// it the key's pointer is the entity, so /order_id in order.placed and in
// order.shipped are the same entity and /order_id beside /customer_id is
// an error.
func (b *builder) checkOrdered(consumers []*Consumer) {
	doc := b.s.Manifest.Doc
	for i, c := range consumers {
		lc := b.s.Manifest.Consumers[i]
		if !lc.Ordered.Ordered || lc.Stream != "" {
			// A stream consumer cannot be ordered at all, which
			// checkStreamConsumer says: what its facts lack is beside
			// the point.
			continue
		}
		c.Ordered = true
		var first *Fact
		for _, f := range c.Facts {
			if f.OrderingKey == "" {
				if f.decl.Ordering.Key == "" {
					b.errs.Add(doc.Errorf(lc.Ordered.Pointer, "consumer %s is ordered, but fact %s (%s) declares no ordering key: add \"x-ordering-key\": a JSON pointer to the property that identifies the entity, such as \"/order_id\"", strconv.Quote(c.Name), f.RoutingKey, f.Location()))
				}
				continue
			}
			if first == nil {
				first = f
				continue
			}
			if f.entity() != first.entity() {
				b.errs.Add(doc.Errorf(lc.Ordered.Pointer, "consumer %s is ordered, but its facts order by different entities: %s by %s, %s by %s; give them keys of one entity (the same pointer, or the same x-ordering-entity)", strconv.Quote(c.Name), first.RoutingKey, first.entityText(), f.RoutingKey, f.entityText()))
			}
		}
	}
}

// entity returns what the fact's ordering key identifies: its
// x-ordering-entity, else the key's pointer.
func (f *Fact) entity() string {
	if f.OrderingEntity != "" {
		return "entity:" + f.OrderingEntity
	}
	return "pointer:" + f.OrderingKey
}

func (f *Fact) entityText() string {
	if f.OrderingEntity != "" {
		return fmt.Sprintf("entity %s (key %s)", strconv.Quote(f.OrderingEntity), f.OrderingKey)
	}
	return f.OrderingKey
}

// OrderingKeyKind returns the scalar kind the ordering key holds (String,
// Int or Bool, under any enum or named definition), for emitters that
// spell the key the way HeaderOrderingKey carries it; Raw when the fact
// has no ordering key.
func (f *Fact) OrderingKeyKind() Kind {
	if len(f.OrderingKeyPath) == 0 {
		return Raw
	}
	r := f.OrderingKeyPath[len(f.OrderingKeyPath)-1].Type
	for r.Kind == Named && (r.Type.Kind == Defined || r.Type.Kind == Enum) {
		r = r.Type.Base
	}
	return r.Kind
}
