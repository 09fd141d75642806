package codec

// The patterns real schemas write for identifiers and codes are mostly
// anchored runs of ASCII classes: ^C-[0-9]{6}$, ^[A-Z0-9]{3,12}(-[A-Z0-9]{2,6})?$.
// Such a pattern is matched here, without the regular-expression engine:
// each alternative (an optional group is there or not) is a list of
// classes with counts, matched against the string by trying the longest
// run of each class first. Any other pattern runs on its engine, and so
// does a match that would take more than matchBudget steps.

// simple is a pattern of the form ^item*$, where an item is a literal
// ASCII character, an ASCII class ([A-Z0-9_], \d, \w) with a quantifier,
// or an optional group (item*)? of those (no nesting).
type simple struct {
	alts [][]run // every way the optional groups can be there or not
}

// run is a class of ASCII characters matched min to max times (max -1:
// no bound).
type run struct {
	set      [2]uint64
	min, max int
}

const (
	maxGroups   = 3
	matchBudget = 10_000
)

func (r *run) has(c byte) bool { return c < 128 && r.set[c>>6]&(1<<(c&63)) != 0 }

// compileSimple returns the matcher of expr, or nil when expr is not of
// the form simple matches.
func compileSimple(expr string) *simple {
	if len(expr) < 2 || expr[0] != '^' || expr[len(expr)-1] != '$' || expr[len(expr)-2] == '\\' {
		return nil
	}
	p := &simpleParser{s: expr[1 : len(expr)-1]}
	alts := [][]run{nil}
	for p.i < len(p.s) {
		if p.s[p.i] == '(' {
			p.i++
			var group []run
			for p.i < len(p.s) && p.s[p.i] != ')' {
				r, ok := p.item()
				if !ok {
					return nil
				}
				group = append(group, r)
			}
			if p.i+1 >= len(p.s) || p.s[p.i+1] != '?' || len(group) == 0 {
				return nil // only an optional group, (...)?
			}
			p.i += 2
			if len(alts)*2 > 1<<maxGroups {
				return nil
			}
			var with [][]run
			for _, a := range alts {
				with = append(with, append(append([]run(nil), a...), group...))
			}
			alts = append(alts, with...)
			continue
		}
		r, ok := p.item()
		if !ok {
			return nil
		}
		for i := range alts {
			alts[i] = append(alts[i], r)
		}
	}
	return &simple{alts: alts}
}

type simpleParser struct {
	s string
	i int
}

// item reads a class or literal and its quantifier.
func (p *simpleParser) item() (run, bool) {
	var r run
	if !p.class(&r) {
		return r, false
	}
	r.min, r.max = 1, 1
	if p.i >= len(p.s) {
		return r, true
	}
	switch p.s[p.i] {
	case '?':
		r.min, r.max = 0, 1
		p.i++
	case '*':
		r.min, r.max = 0, -1
		p.i++
	case '+':
		r.min, r.max = 1, -1
		p.i++
	case '{':
		j := p.i + 1
		lo, j, ok := number(p.s, j)
		if !ok {
			return r, false
		}
		hi := lo
		switch {
		case j+1 < len(p.s) && p.s[j] == ',' && p.s[j+1] == '}':
			hi, j = -1, j+1 // {m,}
		case j < len(p.s) && p.s[j] == ',':
			if hi, j, ok = number(p.s, j+1); !ok || hi < lo {
				return r, false
			}
		}
		if j >= len(p.s) || p.s[j] != '}' {
			return r, false
		}
		r.min, r.max = lo, hi
		p.i = j + 1
	}
	if p.i < len(p.s) && (p.s[p.i] == '?' || p.s[p.i] == '+' || p.s[p.i] == '*' || p.s[p.i] == '{') {
		return r, false // a lazy or second quantifier
	}
	return r, true
}

// number reads a decimal of at most 4 digits at s[i:].
func number(s string, i int) (int, int, bool) {
	n, j := 0, i
	for j < len(s) && j-i < 4 && s[j] >= '0' && s[j] <= '9' {
		n = n*10 + int(s[j]-'0')
		j++
	}
	return n, j, j > i && (j >= len(s) || s[j] < '0' || s[j] > '9')
}

// class reads one literal, escape or bracketed class into r.set.
func (p *simpleParser) class(r *run) bool {
	if p.i >= len(p.s) {
		return false
	}
	c := p.s[p.i]
	switch {
	case c == '[':
		p.i++
		if p.i < len(p.s) && p.s[p.i] == '^' {
			return false // a negated class admits non-ASCII code points
		}
		for p.i < len(p.s) && p.s[p.i] != ']' {
			lo, ok := p.classChar()
			if !ok {
				return false
			}
			hi := lo
			if p.i+1 < len(p.s) && p.s[p.i] == '-' && p.s[p.i+1] != ']' {
				p.i++
				if hi, ok = p.classChar(); !ok || hi < lo {
					return false
				}
			}
			for ch := lo; ch <= hi; ch++ {
				r.set[ch>>6] |= 1 << (ch & 63)
			}
		}
		if p.i >= len(p.s) {
			return false
		}
		p.i++ // ]
		return r.set != [2]uint64{}
	case c == '\\':
		if p.i+1 >= len(p.s) {
			return false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch {
		case e == 'd':
			addRange(r, '0', '9')
		case e == 'w':
			addRange(r, '0', '9')
			addRange(r, 'A', 'Z')
			addRange(r, 'a', 'z')
			addRange(r, '_', '_')
		case isPunct(e):
			addRange(r, e, e)
		default:
			return false
		}
		return true
	case isLiteral(c):
		p.i++
		addRange(r, c, c)
		return true
	}
	return false
}

// classChar reads a character inside brackets: a plain ASCII character or
// an escaped punctuation mark.
func (p *simpleParser) classChar() (byte, bool) {
	c := p.s[p.i]
	if c == '\\' {
		if p.i+1 >= len(p.s) || !isPunct(p.s[p.i+1]) {
			return 0, false
		}
		p.i += 2
		return p.s[p.i-1], true
	}
	if c < 0x20 || c > 0x7e || c == '[' {
		return 0, false
	}
	p.i++
	return c, true
}

func addRange(r *run, lo, hi byte) {
	for ch := lo; ch <= hi; ch++ {
		r.set[ch>>6] |= 1 << (ch & 63)
	}
}

// isLiteral: a character that stands for itself outside brackets.
func isLiteral(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_' || c == ':' || c == '/' || c == '@' || c == '#' || c == ' ' || c == ',' || c == '=' || c == '%' || c == '&' || c == '~'
}

// isPunct: a punctuation mark that an escape makes literal.
func isPunct(c byte) bool {
	return c > 0x20 && c < 0x7f && !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z')
}

// match reports whether s matches; sure is false when the match took too
// many steps and the engine must decide.
func (m *simple) match(s string) (ok, sure bool) {
	budget := matchBudget
	for _, a := range m.alts {
		if ok, sure := matchRuns(a, s, &budget); ok || !sure {
			return ok, sure
		}
	}
	return false, true
}

func matchRuns(runs []run, s string, budget *int) (ok, sure bool) {
	if len(runs) == 0 {
		return len(s) == 0, true
	}
	r := &runs[0]
	n := 0
	for n < len(s) && (r.max < 0 || n < r.max) && r.has(s[n]) {
		n++
	}
	for k := n; k >= r.min; k-- {
		if *budget--; *budget < 0 {
			return false, false
		}
		if ok, sure := matchRuns(runs[1:], s[k:], budget); ok || !sure {
			return ok, sure
		}
	}
	return false, true
}
