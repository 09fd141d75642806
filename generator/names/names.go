// Package names turns names from schemas (titles, property names, routing
// keys, enum values, file paths) into Go identifiers and file names. All of
// warren's naming lives here, one function per job, so that the rules can
// be read and tested in one place.
//
// The rules: split on anything that is not a letter or digit and at
// lower-to-upper case changes; capitalise each word; write well-known
// initialisms, and short words written in capitals, in capitals
// (catalogue_id -> CatalogueID, url -> URL, SKU -> SKU); put an
// X in front of a name that would not start with an upper-case letter
// (3d -> X3d). Names are never altered to avoid a collision: the model
// reports collisions instead.
package names

import (
	"go/token"
	"go/types"
	"strings"
	"unicode"
)

// initialisms are written in capitals when they form a whole word. The list
// is the one Go's own linters use.
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "DNS": true,
	"EOF": true, "GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true,
	"IP": true, "JSON": true, "LHS": true, "QPS": true, "RAM": true, "RHS": true,
	"RPC": true, "SLA": true, "SMTP": true, "SQL": true, "SSH": true, "TCP": true,
	"TLS": true, "TTL": true, "UDP": true, "UI": true, "UID": true, "UUID": true,
	"URI": true, "URL": true, "UTF8": true, "VM": true, "XML": true, "XMPP": true,
	"XSRF": true, "XSS": true,
}

// Words splits s into words: at every rune that is not a letter or digit,
// between a lower-case letter or digit and an upper-case letter
// (catalogueId), and before the last capital of a run of capitals that
// starts a new word (HTTPServer -> HTTP Server).
func Words(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// Camel joins the words of s, each capitalised, initialisms in capitals. A
// short word (up to 4 characters) the author wrote in capitals is taken for
// an abbreviation and stays so (SKU, EUR, XL), unless all of s is in
// capitals with separators (MAX_RETRY_COUNT -> MaxRetryCount), where
// capitals say nothing; longer ones are capitalised (PENDING -> Pending). Camel does
// not make sure the result starts with a letter: use it for the part of a
// name that follows a prefix (an enum type's name before its values).
func Camel(s string) string {
	var b strings.Builder
	words := Words(s)
	shouting := strings.ToUpper(s) == s && strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if up := strings.ToUpper(w); !initialisms[up] && len(w) > 2 && w[len(w)-1] == 's' && initialisms[up[:len(up)-1]] {
			b.WriteString(up[:len(up)-1] + "s") // a plural: urls -> URLs
			continue
		} else if initialisms[up] || !shouting && up == w && len(w) > 1 && len(w) <= 4 && hasLetter(w) {
			b.WriteString(up)
			continue
		}
		rs := []rune(w)
		b.WriteRune(unicode.ToUpper(rs[0]))
		b.WriteString(strings.ToLower(string(rs[1:])))
	}
	return b.String()
}

func hasLetter(s string) bool { return strings.IndexFunc(s, unicode.IsLetter) >= 0 }

// Exported returns s as an exported Go identifier (catalogue.import-completed
// -> CatalogueImportCompleted). If the result would not start with an
// upper-case letter it gets an "X" in front (3d -> X3d). It returns "" when s
// has no letter or digit at all.
func Exported(s string) string {
	c := Camel(s)
	if c == "" {
		return ""
	}
	if r := []rune(c)[0]; !unicode.IsUpper(r) {
		c = "X" + c
	}
	return c
}

// Type returns the Go type name for a schema title, definition name, file
// name or routing key.
func Type(s string) string { return Exported(s) }

// Field returns the Go field name for a JSON property name.
func Field(property string) string { return Exported(property) }

// Method returns the name of the handler method for a fact type.
func Method(factType string) string { return "Handle" + factType }

// Handler returns the name of a consumer's handler interface.
func Handler(consumer string) string { return Exported(consumer) + "Handler" }

// Batch returns the name of a batch consumer's batch type, which its
// handler takes.
func Batch(consumer string) string { return Exported(consumer) + "Batch" }

// Publish returns the name of the Publisher method that publishes a fact
// type.
func Publish(factType string) string { return "Publish" + factType }

// ConsumerConstructor returns the name of the function that binds a
// handler of a consumer to the runtime (search-indexer ->
// NewSearchIndexerConsumer).
func ConsumerConstructor(consumer string) string { return "New" + Exported(consumer) + "Consumer" }

// Package-level names that every generated package declares, whatever its
// schemas say.
const (
	TopologyVar          = "Topology"        // the topology.Topology literal
	DeclareFunc          = "Declare"         // declares TopologyVar over a runtime.Conn
	PublisherType        = "Publisher"       // the typed publisher
	PublisherConstructor = "NewPublisher"    // returns a PublisherType
	OutboxWriterType     = "OutboxWriter"    // the typed outbox writer
	OutboxWriterNew      = "NewOutboxWriter" // returns an OutboxWriterType
	OutboxRelayNew       = "NewOutboxRelay"  // a relay bound to the events exchange
)

// FactVar returns the name of the runtime.Fact variable of a fact type.
func FactVar(factType string) string { return "Fact" + factType }

// RoutingKeyConst returns the name of the routing-key constant of a fact type.
func RoutingKeyConst(factType string) string { return factType + "RoutingKey" }

// DefaultConst returns the name of the constant holding a field's default.
func DefaultConst(typeName, fieldName string) string { return typeName + fieldName + "Default" }

// EnumValue returns the name of the constant for one value of an enum type:
// the type name followed by the value in camel case. The empty string
// becomes "Empty"; a negative number gets "Minus" (Priority-1 ->
// PriorityMinus1). A value without any letter or digit ("+") has no name:
// EnumValue returns "".
func EnumValue(typeName, value string) string {
	if value == "" {
		return typeName + "Empty"
	}
	if strings.HasPrefix(value, "-") && len(value) > 1 && unicode.IsDigit(rune(value[1])) {
		value = "Minus " + value[1:]
	}
	c := Camel(value)
	if c == "" {
		return ""
	}
	return typeName + c
}

// IsReserved reports whether name is a Go keyword or a predeclared
// identifier (string, len, any, ...), which must not be redeclared at
// package level in generated code.
func IsReserved(name string) bool {
	return token.IsKeyword(name) || types.Universe.Lookup(name) != nil
}

// CheckPackage returns a reason why name cannot be the generated package's
// name, or "" if it can.
func CheckPackage(name string) string {
	switch {
	case name == "":
		return "empty"
	case IsReserved(name):
		return "a Go keyword or predeclared identifier"
	case !token.IsIdentifier(name):
		return "not a Go identifier"
	case strings.ToLower(name) != name || strings.Contains(name, "_"):
		return "Go package names are lower-case letters and digits"
	case name == "main":
		return "a generated package is imported, so it cannot be main"
	}
	return ""
}

// File returns the generated file name for a schema file path: lower-case,
// directories joined with '_', and ".go" appended to the ".json"
// (catalogue/import-completed.json -> catalogue_import-completed.json.go).
// The name never starts with '_' or '.' (the go tool would ignore it) and
// never ends in _test.go or a GOOS/GOARCH suffix (it always ends in
// ".json.go").
func File(schemaPath string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(schemaPath) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.TrimLeft(b.String(), "_.-")
	name = strings.TrimSuffix(name, ".json")
	if name == "" {
		// Nothing of the path survived (it is written in another script,
		// say): ".json.go" would be a hidden file the go tool skips.
		name = "schema"
	}
	return name + ".json.go"
}

// symbolWords spell the characters that a name made of symbols consists of
// ("+1" -> "Plus1", "*" -> "Star"): properties and enum values of vendors'
// schemas use them, and two names that differ only in symbols ("+1" and
// "-1") must not become the same Go name.
var symbolWords = map[rune]string{
	'+': "plus", '-': "minus", '*': "star", '.': "dot", '/': "slash", '\\': "backslash",
	'#': "hash", '@': "at", '&': "and", '%': "percent", '$': "dollar", '!': "bang",
	'?': "question", '=': "equals", '<': "less", '>': "greater", '~': "tilde", '^': "caret",
	'|': "pipe", ':': "colon", ';': "semicolon", ',': "comma", '(': "open", ')': "close",
	'[': "open bracket", ']': "close bracket", '{': "open brace", '}': "close brace",
	'\'': "quote", '"': "double quote", '`': "backquote", '_': "underscore", ' ': "space",
}

// Spelled is [Exported] with every symbol spelled as a word, so that names
// made of, or told apart by, symbols get distinct identifiers ("+1" ->
// Plus1, "-1" -> Minus1, "*" -> Star, "foo-bar" -> FooMinusBar).
func Spelled(s string) string {
	var b strings.Builder
	for _, r := range s {
		if w, ok := symbolWords[r]; ok {
			b.WriteString(" " + w + " ")
			continue
		}
		b.WriteRune(r)
	}
	return Exported(b.String())
}
