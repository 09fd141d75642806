package pattern

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// toRE2 returns a pattern in Go's syntax that matches exactly the strings
// that expr, read as an ECMA-262 pattern with the "u" flag, matches; or
// false when expr uses a construct outside the subset translated here.
// The subset is what schemas commonly write: literals, ".", classes and
// ranges, the escapes \d \D \w \W \s \S \b \B \t \n \v \f \r \0 \xHH
// \uHHHH \u{H...} \cX and escaped syntax characters, groups (capturing,
// named, non-capturing), alternation, ^ and $, and greedy or lazy
// quantifiers. Everything else (lookaround, backreferences, \p{...}, an
// empty class) is left to regexp2, as is anything not valid ECMA-262,
// which regexp2 sometimes reads with a meaning of its own.
//
// Whether a string matches anywhere does not depend on how an engine
// searches (RE2's automaton and a backtracking engine find a match for the
// same strings), so only the meaning of each construct has to be the same.
// Only ^, $ and "." differ in multi-line or dot-all mode, and ECMA-262
// patterns in JSON Schema have no flags: Go's defaults are the same.
func toRE2(expr string) (string, bool) {
	if !utf8.ValidString(expr) {
		return "", false
	}
	t := translator{src: expr}
	if !t.run() {
		return "", false
	}
	return t.out.String(), true
}

// ECMA-262's "." matches anything but a line terminator; Go's matches
// anything but "\n".
const dotRE2 = `[^\n\r\x{2028}\x{2029}]`

// space is what ECMA-262's \s matches: WhiteSpace (tab, vertical tab, form
// feed, space, no-break space, U+FEFF and the Unicode Zs category) and
// LineTerminator (\n, \r, U+2028, U+2029); Go's \s is [\t\n\f\r ]. As
// sorted, non-overlapping ranges, so that \S can be their complement.
var space = [][2]rune{
	{0x09, 0x0d}, {0x20, 0x20}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a},
	{0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff},
}

var (
	spaceItems    = classItems(space)
	notSpaceItems = classItems(complement(space))
)

func complement(ranges [][2]rune) [][2]rune {
	var out [][2]rune
	next := rune(0)
	for _, r := range ranges {
		if r[0] > next {
			out = append(out, [2]rune{next, r[0] - 1})
		}
		next = r[1] + 1
	}
	return append(out, [2]rune{next, utf8.MaxRune})
}

// classItems writes ranges as the inside of a Go character class.
func classItems(ranges [][2]rune) string {
	var b strings.Builder
	for _, r := range ranges {
		b.WriteString(lit(r[0]))
		if r[1] != r[0] {
			b.WriteString("-" + lit(r[1]))
		}
	}
	return b.String()
}

// lit writes the rune r so that Go's syntax reads it as itself, in a
// class or outside one.
func lit(r rune) string {
	if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
		return string(r)
	}
	return `\x{` + strconv.FormatInt(int64(r), 16) + `}`
}

type translator struct {
	src   string
	pos   int
	out   strings.Builder
	depth int
	// quantifiable: the last thing written is an atom a quantifier may
	// follow (not an assertion, an alternation or another quantifier).
	quantifiable bool
}

func (t *translator) more() bool { return t.pos < len(t.src) }

// peek returns the rune at the position, and its width.
func (t *translator) peek() (rune, int) {
	if !t.more() {
		return -1, 0
	}
	return utf8.DecodeRuneInString(t.src[t.pos:])
}

func (t *translator) next() rune {
	r, n := t.peek()
	t.pos += n
	return r
}

func (t *translator) eat(prefix string) bool {
	if strings.HasPrefix(t.src[t.pos:], prefix) {
		t.pos += len(prefix)
		return true
	}
	return false
}

// atom writes s, which a quantifier may follow.
func (t *translator) atom(s string) {
	t.out.WriteString(s)
	t.quantifiable = true
}

// other writes s, which no quantifier may follow.
func (t *translator) other(s string) {
	t.out.WriteString(s)
	t.quantifiable = false
}

func (t *translator) run() bool {
	for t.more() {
		r := t.next()
		switch r {
		case '|':
			t.other("|")
		case '^', '$':
			t.other(string(r))
		case '.':
			t.atom(dotRE2)
		case '(':
			if !t.group() {
				return false
			}
		case ')':
			if t.depth == 0 {
				return false
			}
			t.depth--
			t.atom(")")
		case '*', '+', '?':
			if !t.quantifiable {
				return false
			}
			t.quantifier(string(r))
		case '{':
			if !t.quantifiable || !t.braces() {
				return false
			}
		case '[':
			if !t.class() {
				return false
			}
		case '\\':
			if !t.escape() {
				return false
			}
		case '}', ']':
			return false // a syntax error with the u flag
		default:
			t.atom(lit(r))
		}
	}
	return t.depth == 0
}

// group reads what follows "(": a capturing group, "?:" or a named group
// "?<name>". Names do not change what matches, and Go's rules for them
// are not ECMA-262's, so every group is written without its name.
func (t *translator) group() bool {
	switch {
	case t.eat("?:"):
	case strings.HasPrefix(t.src[t.pos:], "?<=") || strings.HasPrefix(t.src[t.pos:], "?<!"):
		return false
	case t.eat("?<"):
		end := strings.IndexByte(t.src[t.pos:], '>')
		if end <= 0 || !isGroupName(t.src[t.pos:t.pos+end]) {
			return false
		}
		t.pos += end + 1
	case strings.HasPrefix(t.src[t.pos:], "?"):
		return false // lookahead, or regexp2's own (?i), (?>...), (?#...)
	}
	t.depth++
	t.other("(?:")
	return true
}

// isGroupName accepts the ASCII group names of ECMA-262 (others are left
// to regexp2).
func isGroupName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// quantifier writes q and a lazy "?" after it.
func (t *translator) quantifier(q string) {
	if t.eat("?") {
		q += "?"
	}
	t.other(q)
}

// braces reads "{n}", "{n,}" or "{n,m}" after "{". With the u flag a "{"
// that starts none of them is a syntax error.
func (t *translator) braces() bool {
	end := strings.IndexByte(t.src[t.pos:], '}')
	if end < 0 {
		return false
	}
	body := t.src[t.pos : t.pos+end]
	lo, hi, comma := strings.Cut(body, ",")
	if !isDigits(lo) || comma && hi != "" && !isDigits(hi) {
		return false
	}
	if comma && hi != "" {
		l, errL := strconv.Atoi(lo)
		h, errH := strconv.Atoi(hi)
		if errL != nil || errH != nil || l > h {
			return false
		}
	}
	t.pos += end + 1
	t.quantifier("{" + body + "}")
	return true
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// escape reads what follows a "\" outside a class.
func (t *translator) escape() bool {
	if !t.more() {
		return false
	}
	switch c := t.src[t.pos]; c {
	case 'd', 'D', 'w', 'W':
		t.pos++
		t.atom(`\` + string(c)) // ASCII in both
	case 's':
		t.pos++
		t.atom("[" + spaceItems + "]")
	case 'S':
		t.pos++
		t.atom("[" + notSpaceItems + "]")
	case 'b', 'B':
		t.pos++
		t.other(`\` + string(c)) // ASCII word boundaries in both
	default:
		r, ok := t.charEscape(false)
		if !ok {
			return false
		}
		t.atom(lit(r))
	}
	return true
}

// charEscape reads an escape that stands for one character, after "\".
func (t *translator) charEscape(inClass bool) (rune, bool) {
	c := t.next()
	switch c {
	case 't':
		return '\t', true
	case 'n':
		return '\n', true
	case 'v':
		return '\v', true
	case 'f':
		return '\f', true
	case 'r':
		return '\r', true
	case 'b':
		return '\b', inClass // a word boundary outside a class
	case '-':
		return '-', inClass // a syntax error outside a class with the u flag
	case '0':
		if d, _ := t.peek(); d >= '0' && d <= '9' {
			return 0, false
		}
		return 0, true
	case 'c':
		l, _ := t.peek()
		if l >= 'a' && l <= 'z' || l >= 'A' && l <= 'Z' {
			t.pos++
			return l % 32, true
		}
		return 0, false
	case 'x':
		return t.hex(2)
	case 'u':
		return t.unicodeEscape()
	}
	if strings.ContainsRune(`^$\.*+?()[]{}|/`, c) {
		return c, true
	}
	return 0, false
}

// hex reads n hex digits.
func (t *translator) hex(n int) (rune, bool) {
	if t.pos+n > len(t.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(t.src[t.pos:t.pos+n], 16, 32)
	if err != nil {
		return 0, false
	}
	t.pos += n
	return rune(v), true
}

// unicodeEscape reads what follows "\u": four hex digits (a surrogate
// pair written as two such escapes is one code point with the u flag) or
// a code point in braces.
func (t *translator) unicodeEscape() (rune, bool) {
	if t.eat("{") {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end <= 0 || end > 8 {
			return 0, false
		}
		v, err := strconv.ParseUint(t.src[t.pos:t.pos+end], 16, 32)
		if err != nil || v > utf8.MaxRune || isSurrogate(rune(v)) {
			return 0, false
		}
		t.pos += end + 1
		return rune(v), true
	}
	hi, ok := t.hex(4)
	if !ok {
		return 0, false
	}
	if hi < 0xd800 || hi > 0xdbff {
		return hi, !isSurrogate(hi) // a lone low surrogate: not a character Go can match
	}
	if !t.eat(`\u`) {
		return 0, false
	}
	lo, ok := t.hex(4)
	if !ok || lo < 0xdc00 || lo > 0xdfff {
		return 0, false
	}
	return 0x10000 + (hi-0xd800)<<10 + (lo - 0xdc00), true
}

func isSurrogate(r rune) bool { return r >= 0xd800 && r <= 0xdfff }

// class reads a character class after "[".
func (t *translator) class() bool {
	negated := t.eat("^")
	var items strings.Builder
	empty := true
	for {
		if !t.more() {
			return false
		}
		if t.eat("]") {
			break
		}
		lo, set, ok := t.classAtom()
		if !ok {
			return false
		}
		empty = false
		if set != "" {
			if t.rangeFollows() {
				return false // a class escape cannot bound a range
			}
			items.WriteString(set)
			continue
		}
		if !t.rangeFollows() {
			items.WriteString(lit(lo))
			continue
		}
		t.pos++ // "-"
		hi, set, ok := t.classAtom()
		if !ok || set != "" || hi < lo {
			return false
		}
		items.WriteString(lit(lo) + "-" + lit(hi))
	}
	if empty {
		return false // [] matches nothing, [^] anything: Go has no such class
	}
	if negated {
		t.atom("[^" + items.String() + "]")
	} else {
		t.atom("[" + items.String() + "]")
	}
	return true
}

// rangeFollows reports whether a "-" that makes a range comes next: one
// that is not the last character of the class.
func (t *translator) rangeFollows() bool {
	return strings.HasPrefix(t.src[t.pos:], "-") && !strings.HasPrefix(t.src[t.pos:], "-]")
}

// classAtom reads one character of a class, or a class escape (set, in
// Go's syntax for the inside of a class).
func (t *translator) classAtom() (r rune, set string, ok bool) {
	c := t.next()
	if c != '\\' {
		return c, "", true
	}
	if !t.more() {
		return 0, "", false
	}
	switch e := t.src[t.pos]; e {
	case 'd', 'D', 'w', 'W':
		t.pos++
		return 0, `\` + string(e), true
	case 's':
		t.pos++
		return 0, spaceItems, true
	case 'S':
		t.pos++
		return 0, notSpaceItems, true
	}
	r, ok = t.charEscape(true)
	return r, "", ok
}
