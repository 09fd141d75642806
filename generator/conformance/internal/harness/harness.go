// Package harness is the part of the conformance program that does not
// change with the suite: it runs each case the way a consumer handles a
// payload and prints one verdict per case.
package harness

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"

	"github.com/warrenbus/warren/runtime"
)

// Check runs one case of a group and reports whether it was accepted and
// whether the accepted value encodes back to the same JSON.
type Check func(data []byte) verdict

// Of checks cases against the fact f, whose payload type T has the group's
// schema as property "value". Besides the consumer's path (validate with
// the embedded schema, then decode), it asks each alone: the reference
// validator, and the generated decoding, which checks the schema itself.
func Of[T any](f runtime.Fact) Check {
	return func(data []byte) verdict {
		payload := []byte(`{"value":` + string(data) + `}`)
		refErr := f.Validate(payload)
		var alone T
		genErr := json.Unmarshal(payload, &alone)
		v := verdict{Reference: refErr == nil, Generated: genErr == nil}
		if genErr != nil {
			v.GeneratedWhy = genErr.Error()
		}
		v.Accepted, v.RoundTrip, v.Why = consume[T](f, payload)
		return v
	}
}

// consume handles a payload as a consumer does.
func consume[T any](f runtime.Fact, payload []byte) (accepted, roundTrip bool, why string) {
	if err := f.Validate(payload); err != nil {
		return false, false, "validate: " + err.Error()
	}
	var v T
	if err := json.Unmarshal(payload, &v); err != nil {
		return false, false, "decode: " + err.Error()
	}
	out, err := json.Marshal(v)
	if err != nil {
		return false, false, "encode: " + err.Error()
	}
	if err := f.Validate(out); err != nil {
		return false, false, "encoded again, " + string(out) + " fails: " + err.Error()
	}
	if !sameJSON(payload, out) {
		return true, false, "encoded again as " + string(out)
	}
	return true, true, ""
}

// sameJSON compares two documents by value (numbers by their text).
func sameJSON(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(strings.NewReader(string(a)))
	da.UseNumber()
	db := json.NewDecoder(strings.NewReader(string(b)))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(byValue(x), byValue(y))
}

// byValue replaces every number by its exact value, so that 1.0 and 1,
// or 1e2 and 100, compare equal.
func byValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			return x.String()
		}
		return r.RatString()
	case map[string]any:
		for k, e := range x {
			x[k] = byValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = byValue(e)
		}
	}
	return v
}

type input struct {
	Key  string          `json:"key"`
	Data json.RawMessage `json:"data"`
}

type verdict struct {
	Accepted     bool   `json:"accepted"`
	RoundTrip    bool   `json:"roundTrip"`
	Why          string `json:"why"`
	Reference    bool   `json:"reference"`    // the embedded schema alone accepts it
	Generated    bool   `json:"generated"`    // the generated decoding alone accepts it
	GeneratedWhy string `json:"generatedWhy"` // why the generated decoding refused it
}

// Main reads the cases from standard input and writes the verdicts to
// standard output, both JSON arrays in the same order.
func Main(checks map[string]Check) int {
	var inputs []input
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := make([]verdict, len(inputs))
	for i, in := range inputs {
		check, ok := checks[in.Key]
		if !ok {
			fmt.Fprintln(os.Stderr, "no check for", in.Key)
			return 1
		}
		out[i] = check(in.Data)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
