// Package codec is what generated fact types stand on to read and write
// JSON in one pass: the interfaces the runtime looks for, the error every
// decode and validation failure is, and the shared helpers generated code
// calls so that each generated file holds only the rules of its types.
//
// JSON is read and written with github.com/go-faster/jx, a streaming
// tokenizer and writer made for generated codecs (ogen's stand on it): a
// generated DecodeJSON walks the tokens once, filling the struct and
// checking the schema as it goes, without building an intermediate tree.
package codec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-faster/jx"
)

// Decoder is implemented by *T for generated fact types: it reads one JSON
// value from d into the receiver and checks it against the schema in the
// same pass. Errors are *Error (or wrap one) naming the JSON pointer of the
// offending value.
type Decoder interface {
	DecodeJSON(d *jx.Decoder) error
}

// Encoder is implemented by T for generated fact types: it writes the
// value's JSON to e. It does not validate; Validate does.
type Encoder interface {
	EncodeJSON(e *jx.Encoder)
}

// Validator is implemented by T for generated fact types: the same rules
// DecodeJSON checks, applied to a value built in Go.
type Validator interface {
	Validate() error
}

// Error says where a JSON value does not match its schema (or is not JSON)
// and what was expected there. Find it in a returned error with
// errors.As(err, new(*codec.Error)).
type Error struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value in the
	// document; "" is the whole document.
	Pointer string
	// Expected says what the schema expected at Pointer, for example
	// `required property "id"` or "at most 64 characters".
	Expected string
	// Err is the underlying cause, if any: a syntax error from the
	// tokenizer, or the error of a format check. It is already part of
	// Expected; it is kept for errors.Is and errors.As.
	Err error
	// Branches, for a value that matches no branch of a oneOf or anyOf,
	// say why each branch does not, in the schema's order.
	Branches []BranchError
}

// Error returns "<pointer>: <expected>", with "(root)" for the whole
// document, as the reference validator's errors read. A value that
// matches no branch of a union adds each branch's reason, its pointer
// from the document's root:
//
//	/payment: a value matching one of the branches (oneOf); oneOf/0 does not: /payment/type: the constant "card"; oneOf/1 does not: /payment: required property "iban"
func (e *Error) Error() string {
	if len(e.Branches) == 0 {
		p := e.Pointer
		if p == "" {
			p = "(root)"
		}
		return p + ": " + e.Expected
	}
	var b strings.Builder
	e.write(&b, "")
	return b.String()
}

// write writes e as Error does, its pointer after base, the pointer of
// the union e is a branch's reason in ("" for the document).
func (e *Error) write(b *strings.Builder, base string) {
	p := base + e.Pointer
	if p == "" {
		b.WriteString("(root)")
	} else {
		b.WriteString(p)
	}
	b.WriteString(": ")
	b.WriteString(e.Expected)
	if len(e.Branches) > 0 {
		b.WriteString(";")
		e.writeBranches(b, p)
	}
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Expect returns an *Error at the current value (pointer "") saying what
// was expected. Callers up the tree prefix the pointer with [AtField] and
// [AtIndex] as the error travels out, so the success path never builds a
// pointer.
//
//go:noinline
func Expect(expected string) error {
	return &Error{Expected: expected}
}

// Wrap turns err (for example the tokenizer's) into an *Error at the
// current value: "expected: err". An err that already holds an *Error is
// returned unchanged.
func Wrap(err error, expected string) error {
	if err == nil { // inlined: most calls pass nil
		return nil
	}
	return wrap(err, expected)
}

func wrap(err error, expected string) error {
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Expected: expected + ": " + err.Error(), Err: err}
}

// AtField prefixes the pointer of the *Error in err with the object member
// name; an error that holds no *Error becomes one at that member.
func AtField(err error, name string) error {
	return at(err, escape(name))
}

// AtIndex prefixes the pointer of the *Error in err with the array index i.
func AtIndex(err error, i int) error {
	return at(err, strconv.Itoa(i))
}

func at(err error, token string) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if !errors.As(err, &ce) {
		return &Error{Pointer: "/" + token, Expected: err.Error(), Err: err}
	}
	ce.Pointer = "/" + token + ce.Pointer
	return err
}

// escape encodes a member name as a JSON pointer token (RFC 6901 §3).
func escape(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}
