package codec

import (
	"strconv"
	"strings"

	"github.com/go-faster/jx"
)

// Keys checks the names of the members of an object that its properties
// do not declare, when additionalProperties is false: each must match one
// of its patternProperties. Generated code declares one per such object:
//
//	var checkConfig_keys = codec.Keys{Patterns: []*codec.Pattern{codec.Regexp(`^x-`)}}
type Keys struct {
	Patterns []*Pattern // matched as "pattern" is: see [Pattern]
}

// Check checks one member name.
func (k *Keys) Check(name string) error {
	for _, p := range k.Patterns {
		if p.Check(name) == nil {
			return nil
		}
	}
	shown := make([]string, len(k.Patterns))
	for i, p := range k.Patterns {
		shown[i] = strconv.Quote(p.expr)
	}
	return Expect("no such property: the object declares its properties and those whose names match " + strings.Join(shown, " or ") + " (patternProperties; additionalProperties is false)")
}

// PatternExtra is [Extra] for an object whose undeclared members must
// have a name k admits.
func PatternExtra[T any](d *jx.Decoder, key []byte, k *Keys, extra *map[string]T, dec func(*jx.Decoder) (T, error)) error {
	if err := k.Check(string(key)); err != nil {
		return err
	}
	return Extra(d, key, extra, dec)
}

// PatternMap is [Map] for an object whose members must have a name k
// admits.
func PatternMap[T any](d *jx.Decoder, k *Keys, dec func(*jx.Decoder) (T, error)) (map[string]T, error) {
	out := map[string]T{}
	err := Object(d, func(d *jx.Decoder, key []byte) error {
		if err := k.Check(string(key)); err != nil {
			return err
		}
		v, err := dec(d)
		out[string(key)] = v
		return err
	})
	return out, err
}

// CheckKeys checks the member names of m, a map built in Go, naming the
// first it finds that k does not admit; each must be valid UTF-8 too
// (see [CheckNames]).
func CheckKeys[T any](k *Keys, m map[string]T) error {
	for name := range m {
		if err := checkName(name); err != nil {
			return err
		}
		if err := k.Check(name); err != nil {
			return AtField(err, name)
		}
	}
	return nil
}
