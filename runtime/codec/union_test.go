package codec_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// branch decodes a branch of a oneOf as generated code does: an object
// whose "type" is the constant typ, with the property required beside
// it.
func branch(typ, required string) func(*jx.Decoder) error {
	return func(d *jx.Decoder) error {
		o := codec.Members(d)
		seen := false
		for o.Next() {
			var err error
			switch string(o.Key()) {
			case "type":
				var s string
				if s, err = codec.Str(d); err == nil && s != typ {
					err = codec.Expect("the constant " + strconv.Quote(typ))
				}
			case required:
				seen = true
				_, err = codec.Str(d)
			default:
				err = d.Skip()
			}
			o.Check(err)
		}
		if err := o.End(nil); err != nil {
			return err
		}
		if !seen {
			return codec.Expect("required property " + strconv.Quote(required))
		}
		return nil
	}
}

// payment decodes a oneOf of a card and a transfer, as a generated union
// does.
func payment(raw []byte, oneOf bool) (matched []string, err error) {
	var u codec.Union
	if u.Match(raw, "oneOf/0", branch("card", "last4")) {
		matched = append(matched, "card")
	}
	if u.Match(raw, "oneOf/1", branch("transfer", "iban")) {
		matched = append(matched, "transfer")
	}
	return matched, u.Count(oneOf)
}

// A value that matches no branch is refused with why each branch does
// not match: the first property each refuses, its pointer from the
// document's root, however deep the union sits.
func TestUnionSaysWhyEachBranchDoesNotMatch(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string
	}{
		{"a constant of neither", `{"type":"cash"}`,
			`/order/payment: a value matching one of the branches (oneOf); oneOf/0 does not: /order/payment/type: the constant "card"; oneOf/1 does not: /order/payment/type: the constant "transfer"`},
		{"a branch's required property missing", `{"type":"card"}`,
			`/order/payment: a value matching one of the branches (oneOf); oneOf/0 does not: /order/payment: required property "last4"; oneOf/1 does not: /order/payment/type: the constant "transfer"`},
		{"no object", `"card"`,
			`/order/payment: a value matching one of the branches (oneOf); oneOf/0 does not: /order/payment: an object, got a string; oneOf/1 does not: /order/payment: an object, got a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := payment([]byte(tc.in), true)
			err = codec.AtField(codec.AtField(err, "payment"), "order")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			var ce *codec.Error
			if !errors.As(err, &ce) || ce.Pointer != "/order/payment" || len(ce.Branches) != 2 || ce.Branches[1].Schema != "oneOf/1" {
				t.Errorf("the *codec.Error: %+v; want it at /order/payment with the reasons of 2 branches", ce)
			}
		})
	}
	matched, err := payment([]byte(`{"type":"card","last4":"4242"}`), true)
	if err != nil || len(matched) != 1 || matched[0] != "card" {
		t.Errorf("a card: matched %v, err %v", matched, err)
	}
	if _, err := payment([]byte(`{"type":"card","last4":"4242"}`), false); err != nil {
		t.Errorf("anyOf, one branch: %v", err)
	}
}

// A value that matches several branches of a oneOf is refused naming
// them; an anyOf takes it.
func TestUnionNamesTheBranchesAOneOfMatchesTwice(t *testing.T) {
	both := func(raw []byte, oneOf bool) error {
		var u codec.Union
		u.Match(raw, "oneOf/0", func(d *jx.Decoder) error { return d.Skip() })
		u.Match(raw, "oneOf/1", func(d *jx.Decoder) error { _, err := codec.Str(d); return err })
		u.Match(raw, "oneOf/2", func(d *jx.Decoder) error { return d.Skip() })
		return u.Count(oneOf)
	}
	err := both([]byte(`"x"`), true)
	if want := "(root): a value matching exactly one branch (oneOf), not 3: oneOf/0, oneOf/1 and oneOf/2 match"; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if err := both([]byte(`"x"`), false); err != nil {
		t.Errorf("anyOf: %v", err)
	}
}

// A union inside a branch of another says its own branches' reasons in
// parentheses, each pointer from the document's root; a union of more
// branches than a Union keeps inline says why of every one.
func TestUnionNestedAndWide(t *testing.T) {
	inner := func(d *jx.Decoder) error {
		raw, err := codec.Raw(d)
		if err != nil {
			return err
		}
		var u codec.Union
		u.Match(raw, "anyOf/0", func(d *jx.Decoder) error { _, err := codec.Str(d); return err })
		u.Match(raw, "anyOf/1", func(d *jx.Decoder) error { _, err := codec.Int64(d); return err })
		return u.Count(false)
	}
	outer := func(d *jx.Decoder) error {
		o := codec.Members(d)
		for o.Next() {
			var err error
			if string(o.Key()) == "ref" {
				err = inner(d)
			} else {
				err = d.Skip()
			}
			o.Check(err) // at the member
		}
		return o.End(nil)
	}
	var u codec.Union
	u.Match([]byte(`{"ref":true}`), "oneOf/0", outer)
	u.Match([]byte(`{"ref":true}`), "oneOf/1", func(d *jx.Decoder) error { _, err := codec.Str(d); return err })
	err := codec.AtField(u.Count(true), "x")
	want := "/x: a value matching one of the branches (oneOf); oneOf/0 does not: (/x/ref: a value matching one of the branches (anyOf); anyOf/0 does not: /x/ref: a string, got a boolean; anyOf/1 does not: /x/ref: an integer, got a boolean); oneOf/1 does not: /x: a string, got an object"
	if err == nil || err.Error() != want {
		t.Errorf("nested:\ngot  %v\nwant %s", err, want)
	}

	var wide codec.Union
	for i := range 11 {
		wide.Match([]byte(`1`), "anyOf/"+strconv.Itoa(i), func(d *jx.Decoder) error { _, err := codec.Str(d); return err })
	}
	var ce *codec.Error
	if err := wide.Count(false); !errors.As(err, &ce) || len(ce.Branches) != 11 || ce.Branches[10].Schema != "anyOf/10" {
		t.Errorf("11 branches: %v", err)
	}
}
