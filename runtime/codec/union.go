package codec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-faster/jx"
)

// Union tries the branches of a oneOf or anyOf on one JSON value, for a
// generated DecodeJSON, and keeps which match and why each other does
// not, so that a value that matches none (or, for a oneOf, several) is
// refused with the reason of every branch rather than with the count
// alone:
//
//	var u codec.Union
//	var v1 Card
//	if u.Match(raw, "oneOf/0", v1.DecodeJSON) {
//		v.Card = &v1
//	}
//	...
//	return u.Count(true)
//
// The zero value is ready; it lives on the stack of the DecodeJSON that
// declares it, and holds the reasons of the first unionInline branches
// without allocating.
type Union struct {
	matched int
	tried   int
	first   [unionInline]branchTry
	more    []branchTry // the branches past the first unionInline
}

// unionInline is how many branches a Union keeps without allocating: a
// union of more is rare.
const unionInline = 8

// branchTry is one branch tried: err is nil when the value matched it.
// It is made an *Error only when the union fails (asError): a value that
// matches keeps the reasons of the other branches without a look inside.
type branchTry struct {
	schema string
	err    error
}

// Match reports whether raw, one JSON value, decodes with dec: whether it
// satisfies the branch of the union at schema, the branch's place in the
// union's schema ("oneOf/1"). dec is the branch's generated decoding,
// which checks it exactly, or that decoding wrapped in
// [MatchesReference].
func (u *Union) Match(raw []byte, schema string, dec func(d *jx.Decoder) error) bool {
	d := jx.GetDecoder()
	d.ResetBytes(raw)
	err := dec(d)
	jx.PutDecoder(d)
	t := branchTry{schema: schema, err: err}
	if err == nil {
		u.matched++
	}
	if u.tried < unionInline {
		u.first[u.tried] = t
	} else {
		u.more = append(u.more, t)
	}
	u.tried++
	return err == nil
}

// Count checks how many branches matched: at least one, and exactly one
// for a oneOf. A value that matches none is refused with each branch's
// reason ([Error.Branches]); one that matches several branches of a
// oneOf, naming them.
func (u *Union) Count(oneOf bool) error {
	switch {
	case u.matched == 0:
		e := &Error{Expected: "a value matching one of the branches (" + kind(oneOf) + ")", Branches: make([]BranchError, 0, u.tried)}
		u.each(func(t branchTry) {
			e.Branches = append(e.Branches, BranchError{Schema: t.schema, Err: asError(t.err)})
		})
		return e
	case oneOf && u.matched > 1:
		var names []string
		u.each(func(t branchTry) {
			if t.err == nil {
				names = append(names, t.schema)
			}
		})
		return Expect("a value matching exactly one branch (oneOf), not " + strconv.Itoa(u.matched) + ": " + andList(names) + " match")
	}
	return nil
}

// each calls f with each branch tried, in order.
func (u *Union) each(f func(branchTry)) {
	for i := range min(u.tried, unionInline) {
		f(u.first[i])
	}
	for _, t := range u.more {
		f(t)
	}
}

// BranchError is why a value does not match one branch of a union.
type BranchError struct {
	// Schema is the branch's place in the union's schema, as "oneOf/1".
	Schema string
	// Err is the first thing the branch refuses in the value. Its
	// Pointer is relative to the union's value: [Error.Error] prints it
	// from the document's root.
	Err *Error
}

// asError is err as an *Error: the one it holds (decoding wraps none in
// words of its own), else one at the current value that says it.
func asError(err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	return &Error{Expected: err.Error(), Err: err}
}

// writeBranches writes why each branch of e does not match, its
// pointers from the document's root (base is e's pointer).
func (e *Error) writeBranches(b *strings.Builder, base string) {
	for i, br := range e.Branches {
		if i > 0 {
			b.WriteString(";")
		}
		b.WriteString(" ")
		b.WriteString(br.Schema)
		b.WriteString(" does not: ")
		nested := len(br.Err.Branches) > 0
		if nested {
			b.WriteString("(")
		}
		br.Err.write(b, base)
		if nested {
			b.WriteString(")")
		}
	}
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
