package model

import (
	"encoding/json"
	"math"
	"math/big"

	"github.com/warrenbus/warren/generator/load"
)

// beyondInt64 says which integer bound or multipleOf of n lies outside
// int64, where generated code, which checks int64 values, would have to
// clamp it (and so accept values the schema refuses); "" when none does.
// A bound counts as the integer bound it is for integers (an exclusive
// minimum of 9223372036854775807 is a minimum of 2^63, which no int64
// reaches).
func beyondInt64(n *load.Schema) string {
	if n == nil {
		return ""
	}
	lo, hi := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	outside := func(b *load.Bound, lower bool) bool {
		i, ok := IntBound(b, lower)
		return !ok || i.Cmp(lo) < 0 || i.Cmp(hi) > 0 // unread: the schema checks it
	}
	if b := n.Minimum; b != nil && outside(b, true) {
		return at(n, "minimum") + ": a bound beyond 64-bit integers"
	}
	if b := n.Maximum; b != nil && outside(b, false) {
		return at(n, "maximum") + ": a bound beyond 64-bit integers"
	}
	if m, ok := n.Keywords["multipleOf"].(json.Number); ok {
		if _, ok := IntMultiple(m); !ok {
			return at(n, "multipleOf") + ": a multiple beyond 64-bit integers"
		}
	}
	return ""
}

// IntBound is the inclusive integer bound that bound b of an integer
// amounts to: x > 2.5 is x >= 3, x < 3 is x <= 2. It is false when b is no
// number.
func IntBound(b *load.Bound, lower bool) (*big.Int, bool) {
	r, ok := new(big.Rat).SetString(b.Value.String())
	if !ok {
		return nil, false
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor
	switch {
	case lower && (m.Sign() != 0 || b.Exclusive):
		q.Add(q, big.NewInt(1))
	case !lower && m.Sign() == 0 && b.Exclusive:
		q.Sub(q, big.NewInt(1))
	}
	return q, true
}

// IntMultiple is what an integer must be a multiple of to be a multiple
// of m: p for m = p/q in lowest terms (an integer is a multiple of 0.5
// whatever it is: p = 1). It is false when m is no number or p is beyond
// int64, where only the embedded schema can tell (the multiples of 2^63
// in int64 are 0 and -2^63).
func IntMultiple(m json.Number) (int64, bool) {
	r, ok := new(big.Rat).SetString(m.String())
	if !ok {
		return 0, false
	}
	p := new(big.Int).Abs(r.Num())
	if !p.IsInt64() {
		return 0, false
	}
	return p.Int64(), true
}
