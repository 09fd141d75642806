package model

import (
	"strconv"

	"github.com/warrenbus/warren/generator/load"
)

// Recursion: a schema that reaches itself is fine when a named Go type
// lies on the way (the type's name ends the Go type there), and an error
// when nothing but $refs, allOf members, arrays or maps do. The builder
// keeps, since the last named type, the $refs it is following
// (builder.resolving, checked by follow) and the inline schemas it is
// typing (builder.inline, checked by typeOf).

// follow returns the type of the target of n's $ref.
func (b *builder) follow(n *load.Schema) Ref {
	loc := n.Location()
	if b.resolving[loc] {
		b.errs.Add(n.Doc.Errorf(load.Append(n.Pointer, "$ref"), "$ref %s leads back to itself without an object or array in between", strconv.Quote(n.RefText)))
		return Ref{Kind: Raw}
	}
	if n.Ref == nil { // load reports these; keep going
		return Ref{Kind: Raw}
	}
	b.resolving[loc] = true
	defer delete(b.resolving, loc)
	return b.typeOf(n.Ref)
}

// withinNamed types the members of a named type that is already declared.
// A $ref met again below it is no cycle: the type's name ends the Go type
// there (a child that is an allOf of its parent, held in the parent's
// array, meets the $ref to itself inside its own copy of the parent's
// properties). So the $refs being followed, and the inline schemas being
// typed, start afresh, and are restored afterwards for the schemas typed
// beside it.
func (b *builder) withinNamed(fn func()) {
	resolving, inline := b.resolving, b.inline
	b.resolving, b.inline = map[string]bool{}, map[*load.Schema]bool{}
	defer func() { b.resolving, b.inline = resolving, inline }()
	fn()
}
