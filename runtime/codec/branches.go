package codec

import (
	"strconv"
	"strings"
)

// Branches checks a oneOf or anyOf beside an object's properties whose
// branches only require some of them ({"anyOf": [{"required": ["a"]},
// {"required": ["b"]}]}): which optional properties a value has decides
// which branches it satisfies. Generated code declares one per union:
//
//	var requiredAnyOfT = codec.Branches{Names: []string{"a", "b"}, Sets: []uint64{0b01, 0b10}}
type Branches struct {
	OneOf bool     // exactly one branch must hold; else at least one (anyOf)
	Names []string // the optional properties the branches require, in the order Check takes them
	Sets  []uint64 // per branch, bit i set when it requires Names[i]; 0 always holds
}

// Check checks an object whose optional property Names[i] is there when
// present[i] is true.
func (b *Branches) Check(present ...bool) error {
	var have uint64
	for i, p := range present {
		if p {
			have |= 1 << i
		}
	}
	n := 0
	for _, set := range b.Sets {
		if have&set == set {
			n++
		}
	}
	switch {
	case n == 0:
		return Expect("the properties of at least one branch (" + kind(b.OneOf) + "): " + b.shown())
	case b.OneOf && n > 1:
		return Expect("the properties of exactly one branch (oneOf), not of " + strconv.Itoa(n) + ": " + b.shown())
	}
	return nil
}

// shown lists the branches: "a"; or "b" and "c".
func (b *Branches) shown() string {
	sets := make([]string, len(b.Sets))
	for i, set := range b.Sets {
		var names []string
		for j, name := range b.Names {
			if set&(1<<j) != 0 {
				names = append(names, strconv.Quote(name))
			}
		}
		if len(names) == 0 {
			names = []string{"(none)"}
		}
		sets[i] = strings.Join(names, " and ")
	}
	return strings.Join(sets, "; or ")
}
