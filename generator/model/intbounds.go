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
func beyondInt64(n *load.Schema) string {
	if n == nil {
		return ""
	}
	lo, hi := new(big.Rat).SetInt64(math.MinInt64), new(big.Rat).SetInt64(math.MaxInt64)
	outside := func(v json.Number) bool {
		r, ok := new(big.Rat).SetString(v.String())
		return ok && (r.Cmp(lo) < 0 || r.Cmp(hi) > 0)
	}
	if b := n.Minimum; b != nil && outside(b.Value) {
		return at(n, "minimum") + ": a bound beyond 64-bit integers"
	}
	if b := n.Maximum; b != nil && outside(b.Value) {
		return at(n, "maximum") + ": a bound beyond 64-bit integers"
	}
	if m, ok := n.Keywords["multipleOf"].(json.Number); ok {
		if r, ok := new(big.Rat).SetString(m.String()); ok && new(big.Int).Abs(r.Num()).Cmp(hi.Num()) > 0 {
			return at(n, "multipleOf") + ": a multiple beyond 64-bit integers"
		}
	}
	return ""
}
