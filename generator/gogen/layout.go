package gogen

import (
	"bytes"
	"go/scanner"
	"go/token"
	"strings"
	"unicode/utf8"
)

// layout writes jennifer's unformatted output in gofmt's layout without
// parsing it into a syntax tree and printing that again, which is what made
// go/format half of the generator's time. It knows the constructs generated
// files are made of: declarations with doc comments, structs with tagged
// fields, interfaces, const and var groups, composite literals one element
// a line or on one line, function bodies and func literals of simple
// statements, if and for blocks, comparisons. It re-spaces the tokens of
// each line, indents by nesting, aligns the columns gofmt aligns, and keeps
// a function body on its header's line when gofmt would. Anything else
// (switch statements, arithmetic but a number times something in a
// composite literal, comments after code, doc comments gofmt would
// reformat, a const group mixing typed and untyped specs...) makes it give
// up: ok is false and the caller runs go/format. Tests compare the two on
// every file they generate (VerifyLayout).
func layout(src []byte) (out []byte, ok bool) {
	return new(scratch).layout(src)
}

// scratch is the memory layout works in, kept from one file to the next
// by a goroutine that lays out many: the tokens, the lines and the
// brackets of a file are dropped when its text is written, and most of
// what laying out a package allocated was these, made again for every
// file. A scratch is used by one goroutine at a time.
type scratch struct {
	toks    []tok
	lines   []srcLine
	starts  []int
	out     []outLine
	stack   []*bracket
	blocks  [][]bracket // of brackets, handed out in turn
	block   int         // the block brackets come from now
	src     bytes.Buffer
	grouped bytes.Buffer
	direct  bytes.Buffer // declarations written directly (gofile)
}

// layout is layout, in the memory of s. The output is the caller's: it
// is not reused.
func (s *scratch) layout(src []byte) (out []byte, ok bool) {
	lines, ok := s.scanLines(src)
	if !ok {
		return nil, false
	}
	l := &layouter{s: s, out: s.out[:0], stack: s.stack[:0]}
	defer func() {
		// keep the grown slices, without what they point to; the
		// brackets are free again once nothing points to them
		clear(l.out)
		clear(l.stack)
		s.out, s.stack = l.out[:0], l.stack[:0]
		for i := range s.blocks[:min(s.block+1, len(s.blocks))] {
			s.blocks[i] = s.blocks[i][:0]
		}
		s.block = 0
	}()
	for i := range lines {
		if !l.line(&lines[i]) {
			return nil, false
		}
	}
	if len(l.stack) != 0 {
		return nil, false
	}
	return l.render()
}

// bracket returns a new bracket, from a block of them: one allocation
// for many.
func (s *scratch) bracket(b bracket) *bracket {
	if s == nil {
		p := new(bracket)
		*p = b
		return p
	}
	if s.block < len(s.blocks) && len(s.blocks[s.block]) == cap(s.blocks[s.block]) {
		s.block++ // the brackets of a full block stay where they are
	}
	if s.block == len(s.blocks) {
		s.blocks = append(s.blocks, make([]bracket, 0, 256))
	}
	s.blocks[s.block] = append(s.blocks[s.block], b)
	return &s.blocks[s.block][len(s.blocks[s.block])-1]
}

// tok is one token of the source: its kind and text.
type tok struct {
	t   token.Token
	lit string
}

func (t tok) text() string {
	if t.lit != "" {
		return t.lit
	}
	return t.t.String()
}

// srcLine is the tokens of one source line and how many newlines came
// before it.
type srcLine struct {
	toks []tok
	nl   int
}

// scanLines splits src into lines of tokens, in the memory of sc: the
// lines it returns are valid until its next call.
func (sc *scratch) scanLines(src []byte) ([]srcLine, bool) {
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	bad := false
	s.Init(file, src, func(token.Position, string) { bad = true }, scanner.ScanComments)
	// all tokens in one slice, each line a part of it; lines counted by
	// hand (token.File.Line searches and locks for every token)
	toks := sc.toks[:0]
	if toks == nil {
		toks = make([]tok, 0, len(src)/6)
	}
	lines := sc.lines[:0]
	starts := sc.starts[:0]
	defer func() { sc.toks, sc.lines, sc.starts = toks[:0], lines[:0], starts[:0] }()
	line, off := 1, 0
	last := 0
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		if t == token.SEMICOLON {
			if lit == "\n" {
				continue // inserted at a line's end
			}
			return nil, false
		}
		if t == token.COMMENT && strings.HasPrefix(lit, "/*") {
			return nil, false
		}
		if t == token.STRING && strings.HasPrefix(lit, "`") && strings.Contains(lit, "\n") {
			return nil, false
		}
		o := file.Offset(pos)
		line += bytes.Count(src[off:o], newline)
		off = o
		if line != last {
			lines = append(lines, srcLine{nl: line - last})
			starts = append(starts, len(toks))
			last = line
		}
		if t.IsKeyword() || t.IsOperator() {
			lit = ""
		}
		toks = append(toks, tok{t, lit})
	}
	if bad {
		return nil, false
	}
	for i := range lines {
		end := len(toks)
		if i+1 < len(lines) {
			end = starts[i+1]
		}
		lines[i].toks = toks[starts[i]:end:end]
	}
	return lines, true
}

var newline = []byte{'\n'}

// bracket is an open (, [ or { and what it opens.
type bracket struct {
	t      token.Token
	kind   int // one of the kinds below
	indent int // of the line it was opened on
	group  int // alignment group of its elements' lines
	elems  int // elements of a composite literal, fields of a struct
	// specs of a const or var group with a type and without
	typed, untyped int
	params         bool        // a parameter or result list
	last           token.Token // the last token directly inside, so far
}

const (
	kindOther     = iota
	kindComposite // composite literal
	kindBlock     // function body or statement block
	kindFields    // struct fields
	kindSpecs     // const or var group
	kindMethods   // an interface's methods
)

// outLine is one line of output: its indentation and, when it takes part
// in an alignment, the cells gofmt's tabwriter pads.
type outLine struct {
	blank  bool // an empty line
	indent int
	cells  []string // aligned cells; the text follows them
	text   string
	group  int      // lines of one group align; 0: none
	owner  *bracket // for cells: the composite literal, struct or group
}

type layouter struct {
	s       *scratch // where brackets come from; nil: the heap
	stack   []*bracket
	out     []outLine
	groups  int
	lastTop token.Token // keyword of the last top-level declaration
	inDecl  bool        // a top-level declaration has started and not ended
	buf     bytes.Buffer
	size    int // of the text of the lines, about
}

func (l *layouter) top() *bracket {
	if len(l.stack) == 0 {
		return nil
	}
	return l.stack[len(l.stack)-1]
}

// line lays out one source line; false when it has something layout does
// not know.
func (l *layouter) line(sl *srcLine) bool {
	toks := sl.toks
	// Blank lines: at most one; between top-level declarations at least
	// one when the next has a doc comment or is of another kind.
	nl := min(sl.nl, 2)
	if len(l.stack) == 0 && len(l.out) > 0 {
		first := toks[0].t
		switch {
		case first == token.COMMENT:
			if l.inDecl {
				nl = 2
			}
			l.inDecl = false
		case first == token.FUNC || first == token.VAR || first == token.CONST || first == token.TYPE || first == token.IMPORT:
			if l.inDecl && first != l.lastTop {
				nl = 2
			}
			l.lastTop = first
			l.inDecl = true
		case first == token.PACKAGE:
		default:
			return false
		}
	}
	if len(l.out) > 0 && nl == 2 {
		l.out = append(l.out, outLine{blank: true})
	}
	return l.layoutTokens(toks)
}

// layoutTokens lays out the tokens of one line, splitting it where a
// statement block on one line must be written on several.
func (l *layouter) layoutTokens(toks []tok) bool {
	// leading closers set the indentation
	indent := 0
	closers := 0
	for closers < len(toks) && isCloser(toks[closers].t) {
		closers++
	}
	if closers > 0 {
		if closers > len(l.stack) {
			return false
		}
		// the first closer's: gofmt indents the line when it writes it
		indent = l.stack[len(l.stack)-1].indent
	} else if t := l.top(); t != nil {
		indent = t.indent + 1
	}
	if t := l.top(); t != nil && t.kind == kindBlock && closers == 0 && len(toks) > 0 {
		switch toks[0].t {
		case token.CASE, token.DEFAULT, token.GO, token.DEFER, token.SELECT, token.GOTO:
			return false
		}
	}
	b := &l.buf // reused: text below copies it
	b.Reset()
	owner := l.top()
	var cellAt []int                    // byte offsets in b where a cell ends
	sig := -1                           // depth of a func keyword whose body is not open yet
	header := false                     // the line begins an if, for, switch or else
	lineDepth := len(l.stack) - closers // after the leading closers
	blockStart := -1                    // index of the block '{' opened on this line
	namePos := false
	binaries := 0         // binary products on the line
	closedParams := false // the token before closed a parameter list
	if closers < len(toks) {
		switch toks[closers].t {
		case token.IF, token.FOR, token.SWITCH, token.ELSE:
			header = true
		}
	}
	funcStart, lit := 0, false // where the last func keyword was written; a literal's
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		var prev tok
		if i > 0 {
			prev = toks[i-1]
		}
		afterParams := closedParams
		closedParams = false
		prevScaled := i > 1 && prev.t == token.MUL && toks[i-2].t == token.INT
		top := l.top()
		kind := kindOther
		empty := i+1 < len(toks) && toks[i+1].t == token.RBRACE
		if t.t == token.LBRACE {
			switch {
			case prev.t == token.STRUCT:
				kind = kindFields
				if i+1 < len(toks) && !empty {
					return false // a struct on one line
				}
			case prev.t == token.INTERFACE:
				if !empty && i+1 < len(toks) {
					return false // an interface on one line
				}
				kind = kindMethods
			case sig == len(l.stack) || (header && len(l.stack) == lineDepth && blockStart < 0) || prev.t == token.ELSE:
				kind = kindBlock
			default:
				kind = kindComposite
			}
		}
		if i > 0 {
			var sp bool
			switch {
			case t.t == token.LBRACE && (prev.t == token.STRUCT || prev.t == token.INTERFACE):
				sp = !empty
			case t.t == token.LBRACE && kind == kindBlock:
				sp = true
			case (t.t == token.LBRACK || t.t == token.ELLIPSIS) && prev.t == token.IDENT && namePos:
				sp = true
			case t.t == token.MUL && prev.t == token.INT, prevScaled:
				sp = true
			default:
				sp = space(prev, t, top, afterParams, i == 1 && len(l.stack) == 0)
			}
			if sp {
				b.WriteByte(' ')
			}
		}
		// a name of a parameter, field or spec is followed by its type
		namePos = t.t == token.IDENT && (i == 0 && top != nil && (top.kind == kindFields || top.kind == kindSpecs) ||
			i == 1 && (toks[0].t == token.VAR || toks[0].t == token.CONST) ||
			i == 1 && toks[0].t == token.TYPE && i+2 < len(toks) && toks[i+1].t == token.LBRACK && (toks[i+2].t == token.RBRACK || toks[i+2].t == token.INT) ||
			top != nil && top.params && (prev.t == token.LPAREN || prev.t == token.COMMA))
		if top != nil {
			top.last = t.t
		}
		switch t.t {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			br := l.s.bracket(bracket{t: t.t, indent: indent, kind: kind, last: t.t})
			if t.t == token.LPAREN && (prev.t == token.CONST || prev.t == token.VAR) && i == 1 {
				br.kind = kindSpecs
			}
			// parameters and results of a function or an interface's method
			br.params = t.t == token.LPAREN && (sig >= 0 || i == 1 && top != nil && top.kind == kindMethods && len(l.stack) == lineDepth)
			if kind == kindBlock && lit && sig == len(l.stack) {
				// a func literal's body: on this line, as gofmt keeps
				// it, or on lines of its own that follow
				sig, lit = -1, false
				if i+1 < len(toks) {
					j := closing(toks, i)
					if j < 0 {
						return false
					}
					if j == i+1 {
						b.WriteString("{}")
					} else {
						body, oneLine := l.respace(toks[i+1:j], true)
						if !oneLine || b.Len()-1-funcStart+len(body) > 100 {
							return false
						}
						b.WriteString("{ " + body + " }")
					}
					if top != nil {
						top.last = token.RBRACE
					}
					i = j
					continue
				}
			}
			if kind == kindBlock {
				sig = -1
				if i+1 < len(toks) {
					if blockStart >= 0 || len(l.stack) != lineDepth {
						return false
					}
					blockStart = i
				}
			}
			l.stack = append(l.stack, br)
			b.WriteString(t.text())
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if top == nil || !matches(top.t, t.t) {
				return false
			}
			if top.kind == kindComposite && top.last != token.COMMA && top.last != token.LBRACE {
				top.elems++
			}
			l.stack = l.stack[:len(l.stack)-1]
			if up := l.top(); up != nil {
				up.last = t.t
			}
			closedParams = top.params
			b.WriteString(t.text())
		case token.FUNC:
			sig = len(l.stack)
			lit = i > 0 || len(l.stack) > 0
			funcStart = b.Len()
			b.WriteString(t.text())
		case token.COMMENT:
			// alone on its line, or after a struct field's tag
			trailing := i > 1 && i == len(toks)-1 && prev.t == token.STRING && top != nil && top.kind == kindFields && len(l.stack) == lineDepth
			if i > 0 && !trailing || !plainComment(t.lit) {
				return false
			}
			b.WriteString(t.text())
		case token.COLON:
			if top != nil && top.kind == kindBlock {
				return false // a label, which gofmt outdents
			}
			b.WriteString(":")
			if top != nil && top.kind == kindComposite && len(l.stack) == lineDepth && closers == 0 {
				cellAt = append(cellAt, b.Len())
			}
		case token.COMMA:
			if top != nil && top.kind == kindComposite {
				top.elems++
			}
			b.WriteString(",")
		default:
			if isBinary(t.t) {
				// comparisons, and a number times something as a
				// composite literal's element: spaced at any depth
				scaled := t.t == token.MUL && prev.t == token.INT && top != nil && top.kind == kindComposite
				if t.t.Precedence() != token.EQL.Precedence() && !isUnary(prev, t) && !scaled {
					return false
				}
				if scaled {
					binaries++
				}
				if isUnary(prev, t) && t.t != token.SUB && t.t != token.MUL && t.t != token.AND && t.t != token.NOT {
					return false
				}
			}
			switch t.t {
			case token.ARROW, token.AND_NOT, token.LAND, token.LOR, token.SEMICOLON, token.GOTO, token.GO, token.DEFER:
				return false
			}
			b.WriteString(t.text())
		}
	}
	if binaries > 1 {
		return false
	}
	if owner != nil && (owner.kind == kindFields || owner.kind == kindSpecs) && closers == 0 && len(l.stack) != lineDepth {
		return false // a field or spec on several lines
	}
	text := b.String()
	l.size += len(text) + indent
	ol := outLine{indent: indent, text: text}
	// cells
	switch {
	case owner != nil && owner.kind == kindComposite && closers == 0 && len(l.stack) == lineDepth && len(cellAt) > 0:
		key := text[:cellAt[0]]
		if strings.ContainsAny(key, " ({[") || len(key)-1 > 40 {
			return false
		}
		ol.cells = []string{key}
		ol.text = strings.TrimPrefix(text[cellAt[0]:], " ")
		ol.owner = owner
		if owner.group == 0 {
			l.groups++
			owner.group = l.groups
		}
		ol.group = owner.group
	case owner != nil && owner.kind == kindFields && closers == 0 && len(l.stack) == lineDepth && toks[0].t == token.IDENT:
		// name type [tag]
		if len(toks) < 2 || toks[1].t == token.COMMA || toks[1].t == token.PERIOD {
			return false
		}
		name := toks[0].lit
		rest := text[len(name)+1:]
		cells := []string{name}
		comment := ""
		if last := toks[len(toks)-1]; last.t == token.COMMENT {
			// the tag ends a cell of its own, the comment follows
			comment = last.lit
			rest = rest[:len(rest)-len(comment)-1]
			toks = toks[:len(toks)-1]
		}
		if last := toks[len(toks)-1]; last.t == token.STRING && len(toks) > 2 {
			typ := rest[:len(rest)-len(last.lit)-1]
			cells = append(cells, typ)
			rest = last.lit
		}
		if comment != "" {
			cells = append(cells, rest)
			rest = comment
		}
		ol.cells, ol.text = cells, rest
		ol.owner = owner
		owner.elems++
		if owner.group == 0 {
			l.groups++
			owner.group = l.groups
		}
		ol.group = owner.group
	case owner != nil && owner.kind == kindSpecs && closers == 0 && len(l.stack) == lineDepth && toks[0].t == token.IDENT:
		eq := strings.Index(text, " = ")
		if eq < 0 || toks[1].t == token.COMMA {
			return false
		}
		name := toks[0].lit
		cells := []string{name}
		if eq > len(name) {
			cells = append(cells, text[len(name)+1:eq])
			owner.typed++
		} else {
			owner.untyped++
		}
		ol.cells, ol.text = cells, text[eq+1:]
		ol.owner = owner
		if owner.group == 0 {
			l.groups++
			owner.group = l.groups
		}
		ol.group = owner.group
	}
	if blockStart >= 0 {
		return l.splitBlock(ol, toks, blockStart)
	}
	l.out = append(l.out, ol)
	return true
}

// splitBlock places a line whose statement block opens and closes on it:
// a function declaration's body stays on the line when gofmt keeps it
// there (header and statements within 100 bytes), any other block is
// written on lines of its own.
func (l *layouter) splitBlock(ol outLine, toks []tok, open int) bool {
	if toks[len(toks)-1].t != token.RBRACE || len(ol.cells) > 0 {
		return false
	}
	hdr, ok := l.respace(toks[:open], false)
	if !ok {
		return false
	}
	inner := toks[open+1 : len(toks)-1]
	isFunc := toks[0].t == token.FUNC && ol.indent == 0 && len(l.stack) == 0
	if len(inner) == 0 {
		if !isFunc {
			return false
		}
		ol.text = hdr + " {}"
		l.out = append(l.out, ol)
		return true
	}
	body, oneLine := l.respace(inner, true)
	// gofmt's header size counts from the column before "func": one more
	if isFunc && oneLine && len(hdr)+1+len(body) <= 100 {
		ol.text = hdr + " { " + body + " }"
		l.out = append(l.out, ol)
		return true
	}
	// the body's statement on a line of its own: lay it out again so
	// that its brackets nest
	l.out = append(l.out, outLine{indent: ol.indent, text: hdr + " {"})
	l.stack = append(l.stack, l.s.bracket(bracket{t: token.LBRACE, kind: kindBlock, indent: ol.indent, last: token.LBRACE}))
	if !l.layoutTokens(inner) {
		return false
	}
	l.stack = l.stack[:len(l.stack)-1]
	l.out = append(l.out, outLine{indent: ol.indent, text: "}"})
	return true
}

// respace writes toks, whose brackets balance, as layoutTokens lays them
// out, in a block when inBlock; oneLine is false when that takes several
// lines.
func (l *layouter) respace(toks []tok, inBlock bool) (text string, oneLine bool) {
	scratch := &layouter{s: l.s, stack: append([]*bracket(nil), l.stack...)}
	if inBlock {
		scratch.stack = append(scratch.stack, l.s.bracket(bracket{t: token.LBRACE, kind: kindBlock, last: token.LBRACE}))
	}
	if !scratch.layoutTokens(toks) || len(scratch.out) == 0 {
		return "", false
	}
	o := scratch.out[0]
	if len(o.cells) > 0 {
		return "", false
	}
	return o.text, len(scratch.out) == 1
}

// plainComment reports whether a line comment is one gofmt leaves as it
// is: text after "// ", none of what go/doc/comment reformats in a doc
// comment (indented code, lists, headings, link definitions) and no tabs.
func plainComment(c string) bool {
	if c == "//" {
		return true
	}
	text, ok := strings.CutPrefix(c, "// ")
	if !ok || strings.ContainsRune(c, '\t') || text == "" {
		return false
	}
	if text[0] == ' ' || text[0] == '[' || text[0] == '#' {
		return false // code, a link's definition, a heading
	}
	if len(text) > 1 && strings.IndexByte("-*+", text[0]) >= 0 && text[1] == ' ' {
		return false // a list
	}
	if n := len(text) - len(strings.TrimLeft(text, "0123456789")); n > 0 && n+1 < len(text) &&
		(text[n] == '.' || text[n] == ')') && text[n+1] == ' ' {
		return false // a numbered list
	}
	return !strings.ContainsRune(text, '•')
}

// closing is the index of the bracket in toks that closes toks[open], or
// -1 when it is not on this line.
func closing(toks []tok, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		switch toks[j].t {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func matches(open, close token.Token) bool {
	return open == token.LPAREN && close == token.RPAREN ||
		open == token.LBRACK && close == token.RBRACK ||
		open == token.LBRACE && close == token.RBRACE
}

func isCloser(t token.Token) bool {
	return t == token.RPAREN || t == token.RBRACK || t == token.RBRACE
}

func isBinary(t token.Token) bool { return t.Precedence() > 0 }

// isUnary reports whether t, after prev, is a unary operator (or, for *, a
// pointer type): it does not follow an operand.
func isUnary(prev, t tok) bool {
	switch t.t {
	case token.MUL, token.AND, token.SUB, token.ADD, token.XOR, token.NOT, token.ARROW:
	default:
		return false
	}
	switch prev.t {
	case token.INT, token.FLOAT, token.IMAG, token.CHAR, token.STRING, token.RBRACE:
		return false
	case token.IDENT, token.RPAREN:
		// after an operand: binary, but for * a pointer type after a
		// name in a parameter or field list, or a result list
		return t.t == token.MUL
	case token.RBRACK:
		return t.t == token.MUL // []*T
	}
	return true
}

// space reports whether gofmt writes a blank between prev and t.
func space(prev, t tok, top *bracket, afterParams, afterTopKeyword bool) bool {
	switch prev.t {
	case token.LPAREN, token.LBRACK, token.PERIOD, token.NOT, token.ELLIPSIS:
		return false
	case token.COMMA:
		return true
	case token.COLON:
		return top == nil || top.t != token.LBRACK
	case token.AND, token.SUB, token.MUL:
		return false // unary: binary ones made layoutTokens give up
	case token.LBRACE:
		return false
	}
	switch t.t {
	case token.RPAREN, token.RBRACK, token.COMMA, token.PERIOD, token.COLON:
		return false
	case token.ELLIPSIS:
		return false
	case token.RBRACE:
		return false
	case token.INC, token.DEC:
		return false
	case token.LPAREN:
		switch prev.t {
		case token.FUNC:
			return afterTopKeyword
		case token.RPAREN:
			return afterParams // results
		}
		return prev.t.IsKeyword() || isAssign(prev.t) || prev.t.Precedence() > 0 && prev.t != token.MUL && prev.t != token.AND
	case token.LBRACK:
		switch prev.t {
		case token.IDENT, token.RBRACK, token.MAP, token.RPAREN:
			return prev.t == token.RPAREN && afterParams
		}
		return true
	case token.LBRACE:
		switch prev.t {
		case token.STRUCT, token.INTERFACE:
			return true // "struct{}" is set right by the caller's check
		case token.RPAREN:
			return true
		case token.IDENT, token.RBRACK:
			return false // a composite literal; blocks are the caller's
		}
		return true
	case token.MUL:
		return prev.t == token.IDENT || prev.t == token.RPAREN || prev.t.IsKeyword() || isAssign(prev.t) || prev.t.Precedence() > 0
	case token.AND, token.SUB, token.NOT:
		return prev.t.IsKeyword() || isAssign(prev.t) || prev.t.Precedence() > 0
	}
	if isAssign(t.t) || t.t.Precedence() > 0 {
		return true
	}
	if isAssign(prev.t) || prev.t.Precedence() > 0 {
		return true
	}
	switch prev.t {
	case token.RBRACK:
		return t.t == token.STRING // []T, map[K]V; a field's tag
	case token.MAP, token.CHAN:
		return false
	}
	return true
}

func isAssign(t token.Token) bool {
	switch t {
	case token.ASSIGN, token.DEFINE, token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.OR_ASSIGN, token.AND_ASSIGN:
		return true
	}
	return false
}

// render writes the lines, padding aligned cells as gofmt's tabwriter does:
// the lines of a group that follow each other form a block, and a cell is
// as wide as the widest of its column in the block, plus one.
func (l *layouter) render() ([]byte, bool) {
	var buf bytes.Buffer
	buf.Grow(l.size + 2*len(l.out))
	out := l.out
	for i := 0; i < len(out); {
		o := out[i]
		if o.blank {
			buf.WriteByte('\n')
			i++
			continue
		}
		if o.owner != nil && o.owner.typed > 0 && o.owner.untyped > 0 {
			return nil, false // gofmt keeps an empty type column: not done here
		}
		if o.group == 0 || len(o.cells) == 0 || o.owner.kind != kindSpecs && o.owner.elems < 2 {
			writeLine(&buf, o, nil)
			i++
			continue
		}
		// the block: following lines of the same group with cells
		j := i
		for j < len(out) && !out[j].blank && out[j].group == o.group && len(out[j].cells) > 0 {
			j++
		}
		widths := columnWidths(out[i:j])
		for k := i; k < j; k++ {
			writeLine(&buf, out[k], widths[k-i])
		}
		i = j
	}
	return buf.Bytes(), true
}

// columnWidths follows tabwriter: column c's block is a run of
// consecutive lines that have a cell c, as wide as its widest cell plus one.
func columnWidths(lines []outLine) [][]int {
	w := make([][]int, len(lines))
	for c := 0; ; c++ {
		any := false
		for i := 0; i < len(lines); {
			if len(lines[i].cells) <= c {
				i++
				continue
			}
			any = true
			j, width := i, 0
			for ; j < len(lines) && len(lines[j].cells) > c; j++ {
				width = max(width, utf8.RuneCountInString(lines[j].cells[c])+1)
			}
			for k := i; k < j; k++ {
				w[k] = append(w[k], width)
			}
			i = j
		}
		if !any {
			return w
		}
	}
}

func writeLine(buf *bytes.Buffer, o outLine, widths []int) {
	for range o.indent {
		buf.WriteByte('\t')
	}
	for c, cell := range o.cells {
		buf.WriteString(cell)
		pad := 1
		if widths != nil {
			pad = widths[c] - utf8.RuneCountInString(cell)
		}
		for range pad {
			buf.WriteByte(' ')
		}
	}
	buf.WriteString(o.text)
	buf.WriteByte('\n')
}
