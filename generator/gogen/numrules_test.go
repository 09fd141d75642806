package gogen

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
)

// text is f as Go source, package names written as they are imported.
func (f frag) text() string {
	var b strings.Builder
	for _, p := range f {
		if p.path != "" {
			b.WriteString(p.path[strings.LastIndex(p.path, "/")+1:] + ".")
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// The rules of numbers are Go literals whatever the schema's numbers: a
// bound beyond float64 is an infinity (every float64 is below 1e400), an
// integer bound is the inclusive one it amounts to, clamped to int64 (the
// type then falls back to its embedded schema, see model's Inexact), and
// a multipleOf beyond int64 is left to that schema: clamped, it would
// refuse -2^63, a multiple of 2^63.
func TestNumberRulesAreGoLiterals(t *testing.T) {
	bound := func(v string, exclusive bool) *load.Bound {
		return &load.Bound{Value: json.Number(v), Exclusive: exclusive}
	}
	tests := []struct {
		name string
		rule frag
		want string
	}{
		{"float beyond float64", floatRule(model.Check{Maximum: bound("1e400", false), Minimum: bound("-1e999", true)}),
			"codec.Float{ExclusiveMin: true, Max: math.Inf(1), Min: math.Inf(-1)}"},
		{"float", floatRule(model.Check{Maximum: bound("2.5", true)}),
			"codec.Float{ExclusiveMax: true, Max: 2.5, Min: math.Inf(-1)}"},
		{"integer exclusive bounds", intRule(model.Check{Minimum: bound("2.5", false), Maximum: bound("10", true)}),
			"codec.Int{Max: 9, Min: 3}"},
		{"integer bounds beyond int64", intRule(model.Check{Minimum: bound("9223372036854775807", true), Maximum: bound("-1e19", false)}),
			"codec.Int{Max: math.MinInt64, Min: math.MaxInt64}"},
		{"integer multipleOf", intRule(model.Check{MultipleOf: "0.5"}),
			"codec.Int{Max: math.MaxInt64, Min: math.MinInt64, MultipleOf: 1}"},
		{"integer multipleOf beyond int64", intRule(model.Check{MultipleOf: "9223372036854775808"}),
			"codec.Int{Max: math.MaxInt64, Min: math.MinInt64}"},
	}
	for _, tt := range tests {
		if got := tt.rule.text(); got != tt.want {
			t.Errorf("%s: %s\nwant %s", tt.name, got, tt.want)
		}
	}
}
