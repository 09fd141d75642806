package codec

import (
	"unsafe"

	"github.com/go-faster/jx"
)

// strBytes reads a JSON string, with the errors of [Str], and returns its
// text, valid only until d reads on.
func strBytes(d *jx.Decoder) ([]byte, error) {
	if err := want(d, jx.String, "a string"); err != nil {
		return nil, err
	}
	b, err := d.StrBytes()
	return b, Wrap(err, "a string")
}

// find returns the value of the enum whose text is b, without making a
// string of b.
func (c *Strings) find(b []byte) (string, bool) {
	lo, hi := 0, len(c.Sorted)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.Sorted[m] < string(b) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(c.Sorted) && c.Sorted[lo] == string(b) {
		return c.Sorted[lo], true
	}
	return "", false
}

// checkText checks b, from a body known to be UTF-8, against the rules
// (see [String.Check]). It makes a string of b, on the scratch's slab,
// only for a check that needs one: not for a format whose native check
// accepts b, which looks at b, which d may overwrite later, and keeps
// nothing of it.
func (c *String) checkText(b []byte, s *scratch) error {
	if c.MinLength > 0 || c.MaxLength >= 0 || c.Pattern != nil || c.Enum != nil {
		return c.rules(s.str(b))
	}
	if c.Format == nil || c.Format.valid != nil && len(b) > 0 && c.Format.valid(unsafe.String(&b[0], len(b))) {
		return nil
	}
	return c.Format.Check(string(b))
}

// readStrPtr is readPtr for a *string: the strings the pointers of one
// decode point to are allocated together, strsSlab at a time, and kept by
// the value decoded only (a new decode starts a new slab).
func readStrPtr(d *jx.Decoder, p *Prop, s *scratch) (*string, error) {
	if p.Null && IsNull(d) {
		return nil, nil
	}
	v, err := readStr(d, p.Rule, s)
	if err != nil {
		return nil, err
	}
	if len(s.strs) == cap(s.strs) {
		s.strs = make([]string, 0, strsSlab)
	}
	s.strs = append(s.strs, v)
	return &s.strs[len(s.strs)-1], nil
}

const strsSlab = 8
