package schemaset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// MarshalUnion encodes a union value (a oneOf/anyOf type) from the branches
// that are set, in branch order. A oneOf needs exactly one; an anyOf needs at
// least one, and when several are set they must agree: objects are merged
// (a key keeps the first branch's value), anything else must encode the
// same. Decoding a document and encoding it again gives the same JSON.
func MarshalUnion(typeName string, oneOf bool, set []any) ([]byte, error) {
	switch {
	case len(set) == 0:
		return nil, fmt.Errorf("%s: no branch is set", typeName)
	case oneOf && len(set) > 1:
		return nil, fmt.Errorf("%s: %d branches are set; a oneOf holds exactly one", typeName, len(set))
	case len(set) == 1:
		return json.Marshal(set[0])
	}
	encoded := make([][]byte, len(set))
	objects := true
	for i, v := range set {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: branch %d: %w", typeName, i+1, err)
		}
		encoded[i] = b
		objects = objects && len(b) > 0 && b[0] == '{'
	}
	if !objects {
		for _, b := range encoded[1:] {
			if !bytes.Equal(b, encoded[0]) {
				return nil, fmt.Errorf("%s: the branches that are set encode to different values", typeName)
			}
		}
		return encoded[0], nil
	}
	merged := map[string]json.RawMessage{}
	for _, b := range encoded {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", typeName, err)
		}
		for k, v := range m {
			if _, ok := merged[k]; !ok {
				merged[k] = v
			}
		}
	}
	return json.Marshal(merged) // keys sorted: deterministic
}

// CheckUnion reports a decoded union that matched a wrong number of
// branches: none, or (for a oneOf) more than one.
func CheckUnion(typeName string, oneOf bool, branches ...bool) error {
	matched := 0
	for _, ok := range branches {
		if ok {
			matched++
		}
	}
	switch {
	case matched == 0:
		return fmt.Errorf("%s: the value matches none of the branches", typeName)
	case oneOf && matched > 1:
		return fmt.Errorf("%s: the value matches %d branches; a oneOf must match exactly one", typeName, matched)
	}
	return nil
}

// MarshalObject encodes a struct (declared is its encoding without the
// additional properties) together with its additional properties. An
// additional property with the name of a declared one is an error rather
// than a duplicate key.
func MarshalObject[T any](declared []byte, extra map[string]T, known []string) ([]byte, error) {
	if len(extra) == 0 {
		return declared, nil
	}
	for k := range extra {
		if slices.Contains(known, k) {
			return nil, fmt.Errorf("additional property %q has the name of a declared property", k)
		}
	}
	more, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(declared, []byte("{}")) {
		return more, nil
	}
	out := make([]byte, 0, len(declared)+len(more))
	out = append(out, declared[:len(declared)-1]...)
	out = append(out, ',')
	return append(out, more[1:]...), nil
}

// UnmarshalExtra decodes the properties of a JSON object that are not among
// known into *extra (nil when there are none).
func UnmarshalExtra[T any](data []byte, extra *map[string]T, known []string) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	*extra = nil
	for k, raw := range all {
		if slices.Contains(known, k) {
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("additional property %q: %w", k, err)
		}
		if *extra == nil {
			*extra = map[string]T{}
		}
		(*extra)[k] = v
	}
	return nil
}

// DecodeBranch decodes data into dst if data satisfies the schema at loc
// (one branch of a union), and reports whether it did.
func (s *set) DecodeBranch(typeName, loc string, data []byte, dst any) (bool, error) {
	ok, err := s.Matches(loc, data)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("%s: %w", typeName, err)
		}
		return false, err
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return false, fmt.Errorf("%s: branch %s: %w", typeName, loc, err)
	}
	return true, nil
}

// Nullable is the Go type of an optional property that may also be null,
// so that "absent" and "null" stay apart through decoding and encoding:
// the zero Nullable is absent (and left out when encoding, with
// omitzero), Present without Valid is an explicit null, Present and Valid
// is Value.
type Nullable[T any] struct {
	Present bool // the property is in the object
	Valid   bool // it is not null: Value holds it
	Value   T
}

// Some returns a present, non-null v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{Present: true, Valid: true, Value: v} }

// Null returns an explicit null.
func Null[T any]() Nullable[T] { return Nullable[T]{Present: true} }

// IsZero reports whether the property is absent; omitzero leaves it out.
func (n Nullable[T]) IsZero() bool { return !n.Present }

// MarshalJSON encodes Value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// UnmarshalJSON decodes a present property: null, or a value.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	var zero T
	*n = Nullable[T]{Present: true, Value: zero}
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	n.Valid = true
	return json.Unmarshal(data, &n.Value)
}
