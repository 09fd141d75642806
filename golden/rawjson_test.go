package golden_test

import (
	"encoding/json"
	"strings"
	"testing"

	additional "github.com/warrenbus/warren/golden/additional/want"
	arrays "github.com/warrenbus/warren/golden/arrays/want"
	"github.com/warrenbus/warren/golden/arrays/want/arraystest"
	objects "github.com/warrenbus/warren/golden/objects/want"
	wild "github.com/warrenbus/warren/golden/wild/want"
	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// A json.RawMessage whose bytes are no JSON is refused by the generated
// Validate, naming the JSON pointer of the value, wherever a raw value
// sits: a field of a struct spelled out or of a Shape, an item, a map's
// value, an additional property, a property of a nested struct, a type
// the embedded schema checks. The encoder writes raw bytes as they are,
// so without it Publish would send a body no consumer can read.
func TestGeneratedValidateRefusesRawBytesThatAreNoJSON(t *testing.T) {
	notJSON := json.RawMessage(`{"k": nope}`)
	basket := func(edit func(*arrays.BasketUpdated)) codec.Validator {
		return edited(t, "arrays", "basket.updated/full.json", edit)
	}
	order := func(edit func(*objects.OrderPlaced)) codec.Validator {
		return edited(t, "objects", "order.placed/full.json", edit)
	}
	config := func(edit func(*additional.ConfigChanged)) codec.Validator {
		return edited(t, "additional", "config.changed/full.json", edit)
	}
	const got = ": JSON text, got invalid character 'o' in literal null (expecting 'u')"
	for _, tc := range []struct {
		name string
		v    codec.Validator
		want string
	}{
		{"spelled out: an item", basket(func(v *arrays.BasketUpdated) { v.Anything[2] = notJSON }), "/anything/2" + got},
		{"spelled out: an additional property", basket(func(v *arrays.BasketUpdated) {
			v.AdditionalProperties = map[string]json.RawMessage{"x-note": json.RawMessage(`plain text`)}
		}), "/x-note: JSON text, got invalid character 'p' looking for beginning of value"},
		{"spelled out: an empty raw item", basket(func(v *arrays.BasketUpdated) { v.Anything = []json.RawMessage{{}} }), "/anything/0: JSON text, got nothing"},
		{"nested: an additional property of an item's struct", basket(func(v *arrays.BasketUpdated) {
			v.Lines[1].AdditionalProperties = map[string]json.RawMessage{"gift": notJSON}
		}), "/lines/1/gift" + got},
		{"Shape: a field", order(func(v *objects.OrderPlaced) { v.Metadata = notJSON }), "/metadata" + got},
		{"Shape: an additional property", order(func(v *objects.OrderPlaced) {
			v.AdditionalProperties = map[string]json.RawMessage{"channel": json.RawMessage(`"web`)}
		}), "/channel: JSON text, got unexpected end of JSON input"},
		{"a map's value", config(func(v *additional.ConfigChanged) {
			v.Open = map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": notJSON}
		}), "/open/b" + got},
		{"a map of patterns' value", config(func(v *additional.ConfigChanged) {
			v.ByPattern = map[string]json.RawMessage{"x-b": json.RawMessage(`1 2`)}
		}), "/by_pattern/x-b: JSON text, got invalid character '2' after top-level value"},
		{"embedded schema: a field", &wild.UntypedKeywords{Point: json.RawMessage(`{"x":}`)}, "/point: JSON text, got invalid character '}' looking for beginning of value"},
	} {
		err := tc.v.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %s", tc.name, err, tc.want)
		}
	}
	if err := basket(func(v *arrays.BasketUpdated) { v.Anything[2] = json.RawMessage(" {\"k\": null}\n") }).Validate(); err != nil {
		t.Errorf("raw JSON with white space around it: %v", err)
	}
}

// Publish refuses a raw value that is no JSON before sending anything.
func TestPublishRefusesRawBytesThatAreNoJSON(t *testing.T) {
	arraystest.Run(t, func(t *testing.T, k *arraystest.Kit) {
		v := sampled[arrays.BasketUpdated](t, "arrays", "basket.updated/full.json")
		v.Anything[0] = json.RawMessage(`one`)
		const want = "/anything/0: JSON text, got invalid character 'o' looking for beginning of value"
		if _, err := warrentest.TryPublish(k.Bus, arrays.FactBasketUpdated, v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Publish: %v, want an error with %s", err, want)
		}
		if n := len(k.Published()); n != 0 {
			t.Errorf("%d facts published, want none", n)
		}
	})
}
